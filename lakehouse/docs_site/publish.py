"""Publish the docs site to S3 static website hosting (boto3, the standard AWS credential chain).

Uploaded under ``<prefix>/``: ``index.html`` (the self-contained ``static_index.html``, so
the site works from any static host), ``manifest.json`` and ``catalog.json`` (for tools),
each with its content type; the bucket's website configuration gets ``index.html`` as its
index document so ``http://<bucket>.s3-website-<region>.amazonaws.com/<prefix>/`` opens the site.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lakehouse.docs_site.site import check_site_files

#: site file -> (object name under the prefix, Content-Type, Cache-Control)
PUBLISHED_FILES = (
    ("static_index.html", "index.html", "text/html; charset=utf-8", "no-cache"),
    ("manifest.json", "manifest.json", "application/json", "no-cache"),
    ("catalog.json", "catalog.json", "application/json", "no-cache"),
)


class PublishError(RuntimeError):
    """The bucket is missing/unreachable or the site is incomplete; the message names which."""


@dataclass(frozen=True)
class PublishResult:
    bucket: str
    keys: list[str]
    website_url: str | None


def object_key(prefix: str, name: str) -> str:
    prefix = prefix.strip("/")
    return f"{prefix}/{name}" if prefix else name


def publish_site(
    site: Path,
    bucket: str,
    prefix: str = "",
    endpoint_url: str | None = None,
    region: str | None = None,
    configure_website: bool = True,
    client=None,
) -> PublishResult:
    """Upload the site; ``client`` (a boto3 S3 client) is made from the standard chain if not given."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    check_site_files(site, [source for source, *_ in PUBLISHED_FILES])
    client = client or boto3.client("s3", endpoint_url=endpoint_url, region_name=region)
    keys = []
    try:
        client.head_bucket(Bucket=bucket)
        for source, name, content_type, cache in PUBLISHED_FILES:
            key = object_key(prefix, name)
            client.upload_file(
                str(site / source), bucket, key,
                ExtraArgs={"ContentType": content_type, "CacheControl": cache},
            )
            keys.append(key)
        if configure_website:
            client.put_bucket_website(
                Bucket=bucket,
                WebsiteConfiguration={
                    "IndexDocument": {"Suffix": "index.html"},
                    "ErrorDocument": {"Key": object_key(prefix, "index.html")},
                },
            )
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "?")
        if code in ("404", "NoSuchBucket"):
            raise PublishError(
                f"bucket '{bucket}' does not exist (or is not visible with these credentials)"
            ) from exc
        raise PublishError(f"S3 refused the upload to '{bucket}': {code}: {exc}") from exc
    except BotoCoreError as exc:
        raise PublishError(f"cannot reach S3 for bucket '{bucket}': {exc}") from exc
    url = _website_url(client, bucket, prefix, endpoint_url) if configure_website else None
    return PublishResult(bucket, keys, url)


def _website_url(client, bucket: str, prefix: str, endpoint_url: str | None) -> str:
    path = f"/{prefix.strip('/')}/" if prefix.strip("/") else "/"
    if endpoint_url:
        return f"{endpoint_url.rstrip('/')}/{bucket}{path}index.html"
    region = client.meta.region_name or "us-east-1"
    return f"http://{bucket}.s3-website-{region}.amazonaws.com{path}"
