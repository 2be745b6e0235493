"""``lakehouse docs build|serve|stop|publish``: the analyst docs site (dbt docs)."""

from __future__ import annotations

import argparse
import os

from rich.console import Console

from lakehouse.cli._common import CliError, UsageError
from lakehouse.config import load_settings
from lakehouse.docs_site import server
from lakehouse.docs_site.publish import PublishError, publish_site
from lakehouse.docs_site.site import DocsBuildError, build_site, check_site_files, site_dir


def _build(args: argparse.Namespace) -> int:
    settings = load_settings()
    extra = list(args.dbt_args or [])
    if extra and extra[0] == "--":
        extra = extra[1:]
    console = Console(stderr=True)
    with console.status("dbt docs generate --static ..."):
        try:
            summary = build_site(settings, empty_catalog=args.empty_catalog, extra_dbt_args=extra,
                                 skip_generate=args.skip_generate)
        except DocsBuildError as exc:
            raise CliError(str(exc), hint="is the Thrift server up? 'lakehouse thrift status'") from exc
    console.print(
        f"docs site in {summary.site_dir}: {summary.models} models, {summary.sources} sources, "
        f"{summary.exposures} exposures, overview page: {'yes' if summary.has_overview else 'dbt default'}"
    )
    console.print("  " + ", ".join(f"{name} ({size / 1e6:.1f} MB)" for name, size in summary.files.items()))
    return 0


def _port(args: argparse.Namespace) -> int:
    port = args.port if args.port is not None else load_settings().docs_port
    if not 0 < port < 65536:
        raise UsageError(f"--port must be 1-65535, got {port}")
    return port


def _serve(args: argparse.Namespace) -> int:
    settings = load_settings()
    port = _port(args)
    try:
        if args.background:
            env = {**os.environ, "LAKEHOUSE_HOME": str(settings.home)}
            pid = server.start_detached(settings, port, env)
            print(f"docs site at http://{server.BIND_HOST}:{port}/ (pid {pid}; stop: lakehouse docs stop)")
            return 0
        server.serve_forever(
            settings, port,
            on_ready=lambda p: print(f"docs site at http://{server.BIND_HOST}:{p}/ (Ctrl-C to stop)", flush=True),
        )
    except server.DocsServerError as exc:
        raise CliError(str(exc), hint="build it with 'lakehouse docs build', or pick another --port") from exc
    return 0


def _stop(args: argparse.Namespace) -> int:
    print(server.stop(load_settings()))
    return 0


def _publish(args: argparse.Namespace) -> int:
    bucket = args.bucket or os.environ.get("LAKEHOUSE_DOCS_BUCKET")
    if not bucket:
        raise UsageError("no bucket given", hint="pass --bucket B or set LAKEHOUSE_DOCS_BUCKET")
    site = site_dir(load_settings())
    try:
        check_site_files(site, ["static_index.html", "manifest.json", "catalog.json"])
        result = publish_site(site, bucket, args.prefix, endpoint_url=args.endpoint_url, region=args.region,
                              configure_website=not args.no_website)
    except (DocsBuildError, PublishError) as exc:
        raise CliError(str(exc), hint="credentials come from the standard AWS chain (env, profile, role)") from exc
    print(f"published {len(result.keys)} objects to s3://{bucket}/{args.prefix.strip('/')}")
    if result.website_url:
        print(f"website: {result.website_url}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    docs = subparsers.add_parser(
        "docs", help="the analyst docs site: build, serve, publish",
        description="dbt docs for analysts: lineage from bronze sources to gold models and exposures.",
    )
    sub = docs.add_subparsers(dest="docs_command", metavar="ACTION", required=True)

    build = sub.add_parser("build", help="dbt docs generate --static into $LAKEHOUSE_HOME/docs/site",
                           description="Needs the Thrift server for the catalog (column types); "
                           "--empty-catalog builds from the manifest alone.")
    build.add_argument("--empty-catalog", action="store_true", help="skip the warehouse catalog queries")
    build.add_argument("--skip-generate", action="store_true",
                       help="install the site from the existing dbt target without running dbt")
    build.add_argument("dbt_args", nargs=argparse.REMAINDER, help="extra dbt arguments after --")
    build.set_defaults(func=_build)

    serve = sub.add_parser("serve", help="serve the site on 127.0.0.1 (PID file $LAKEHOUSE_HOME/run/docs.pid)")
    serve.add_argument("--port", type=int, help="port (env LAKEHOUSE_DOCS_PORT, default 8080)")
    serve.add_argument("--background", action="store_true", help="detach; stop with 'lakehouse docs stop'")
    serve.set_defaults(func=_serve)

    stop = sub.add_parser("stop", help="stop the background docs server")
    stop.set_defaults(func=_stop)

    publish = sub.add_parser("publish", help="upload the site to S3 static website hosting",
                             description="Uploads index.html (self-contained), manifest.json and catalog.json "
                             "with their content types, and sets the bucket's website index document.")
    publish.add_argument("--bucket", help="S3 bucket (env LAKEHOUSE_DOCS_BUCKET)")
    publish.add_argument("--prefix", default="", help="key prefix, e.g. docs (default: bucket root)")
    publish.add_argument("--endpoint-url", help="S3 endpoint (e.g. a local S3; env AWS_ENDPOINT_URL_S3 also works)")
    publish.add_argument("--region", help="AWS region (default: the AWS chain's)")
    publish.add_argument("--no-website", action="store_true", help="do not touch the bucket's website configuration")
    publish.set_defaults(func=_publish)
