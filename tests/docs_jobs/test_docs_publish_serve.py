"""Docs site install, local server and S3 publishing (against moto's S3 server on 127.0.0.1).

The site here is a small hand-made one (files with known bytes), so these tests need no
dbt run; the browser test covers a real generated site.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import pytest

from lakehouse.docs_site.publish import PublishError, publish_site
from lakehouse.services.ports import free_port
from lakehouse.services.registry import process_start_ticks

FAKE_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def lakehouse(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    code = "import sys; from lakehouse.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout)


def make_site(home: Path) -> dict[str, bytes]:
    site = home / "docs" / "site"
    site.mkdir(parents=True)
    files = {
        "index.html": b"<html><body>app shell</body></html>",
        "static_index.html": "<html><body>self-contained \u00e9</body></html>".encode(),
        "manifest.json": json.dumps({"nodes": {}, "docs": {}}).encode(),
        "catalog.json": json.dumps({"nodes": {}}).encode(),
    }
    for name, data in files.items():
        (site / name).write_bytes(data)
    return files


@pytest.fixture
def s3(moto_endpoint, monkeypatch):
    for key, value in FAKE_AWS.items():
        monkeypatch.setenv(key, value)
    return boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")


def test_publish_uploads_site_with_content_types_and_website_index(home, s3, moto_endpoint):
    files = make_site(home)
    s3.create_bucket(Bucket="analyst-docs")

    result = lakehouse(
        ["docs", "publish", "--bucket", "analyst-docs", "--prefix", "tickit/", "--endpoint-url", moto_endpoint],
        {"LAKEHOUSE_HOME": str(home), **FAKE_AWS},
    )

    assert result.returncode == 0, result.stderr
    listed = {o["Key"] for o in s3.list_objects_v2(Bucket="analyst-docs")["Contents"]}
    assert listed == {"tickit/index.html", "tickit/manifest.json", "tickit/catalog.json"}
    index = s3.get_object(Bucket="analyst-docs", Key="tickit/index.html")
    assert index["ContentType"] == "text/html; charset=utf-8"
    assert index["Body"].read() == files["static_index.html"]  # the self-contained page is the index
    manifest = s3.get_object(Bucket="analyst-docs", Key="tickit/manifest.json")
    assert manifest["ContentType"] == "application/json"
    assert manifest["Body"].read() == files["manifest.json"]
    website = s3.get_bucket_website(Bucket="analyst-docs")
    assert website["IndexDocument"] == {"Suffix": "index.html"}
    assert website["ErrorDocument"] == {"Key": "tickit/index.html"}
    assert "tickit/index.html" in result.stdout


def test_publish_to_a_missing_bucket_names_it(home, s3, moto_endpoint):
    make_site(home)
    with pytest.raises(PublishError, match="bucket 'no-such-bucket' does not exist"):
        publish_site(home / "docs/site", "no-such-bucket", endpoint_url=moto_endpoint)


def test_publish_without_a_built_site_is_a_clear_error(home):
    result = lakehouse(["docs", "publish", "--bucket", "b"], {"LAKEHOUSE_HOME": str(home), **FAKE_AWS})
    assert result.returncode == 1
    assert "no complete docs site" in result.stderr and "lakehouse docs build" in result.stderr


def test_serve_in_background_then_stop(home):
    files = make_site(home)
    port = free_port()
    env = {"LAKEHOUSE_HOME": str(home), "LAKEHOUSE_DOCS_PORT": str(port)}

    started = lakehouse(["docs", "serve", "--background"], env)  # port from LAKEHOUSE_DOCS_PORT
    assert started.returncode == 0, started.stderr
    pid = int((home / "run/docs.pid").read_text().split()[0])
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as response:
            assert response.read() == files["index.html"]
            assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/manifest.json") as response:
            assert response.headers["Content-Type"] == "application/json"
        again = lakehouse(["docs", "serve", "--background", "--port", str(free_port())], env)
        assert again.returncode == 1 and "already runs" in again.stderr
    finally:
        stopped = lakehouse(["docs", "stop"], env)
    assert f"stopped pid {pid}" in stopped.stdout
    assert not (home / "run/docs.pid").exists()
    assert process_start_ticks(pid) is None  # gone (or a zombie awaiting its reaper)


def test_serve_refuses_a_busy_port_and_a_missing_site(home, tmp_path):
    empty_home = tmp_path / "empty"
    missing = lakehouse(["docs", "serve", "--port", str(free_port())], {"LAKEHOUSE_HOME": str(empty_home)})
    assert missing.returncode == 1 and "no docs site" in missing.stderr

    make_site(home)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = lakehouse(["docs", "serve", "--port", str(port)], {"LAKEHOUSE_HOME": str(home)})
    assert result.returncode == 1 and f"port {port}" in result.stderr and "in use" in result.stderr
