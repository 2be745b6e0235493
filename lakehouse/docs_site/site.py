"""Build the analyst docs site: ``dbt docs generate --static`` into ``$LAKEHOUSE_HOME/docs/site/``.

The site directory holds what both hosting styles need:

- ``index.html`` + ``manifest.json`` + ``catalog.json`` — dbt's regular app (served locally);
- ``static_index.html`` — the single self-contained file (published as S3's ``index.html``).

It is replaced atomically (built beside, then renamed), so a server never sees half a site.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lakehouse.config import PROJECT_DIR, Settings

SITE_FILES = ("index.html", "static_index.html", "manifest.json", "catalog.json")
REQUIRED_FILES = ("index.html", "manifest.json")

DbtRunner = Callable[[Sequence[str]], int]


class DocsBuildError(RuntimeError):
    """dbt failed or produced no site; the message says which and where to look."""


@dataclass(frozen=True)
class SiteSummary:
    site_dir: Path
    files: dict[str, int]  # name -> bytes
    models: int
    sources: int
    exposures: int
    has_overview: bool


def site_dir(settings: Settings) -> Path:
    return settings.home / "docs" / "site"


def dbt_target_dir() -> Path:
    """dbt's target path: ``DBT_TARGET_PATH`` (set per job by the job runner) or ``<project>/target``."""
    return Path(os.environ.get("DBT_TARGET_PATH") or PROJECT_DIR / "target")


def _default_dbt(args: Sequence[str]) -> int:
    from lakehouse.dbt_runner import run_dbt

    return run_dbt(list(args)).returncode


def generate_args(target: Path, empty_catalog: bool = False, extra: Sequence[str] = ()) -> list[str]:
    # A full parse: the site's manifest must not inherit a partial-parse state left in the
    # target by other dbt commands (a stale child_map once drew lineage the manifest lacked).
    args = ["docs", "generate", "--static", "--no-partial-parse", "--target-path", str(target)]
    if empty_catalog:
        args.append("--empty-catalog")
    return [*args, *extra]


#: Options of ``docs generate`` that ``run-operation`` takes too (which connection and variables).
SHARED_OPTIONS = ("--target", "-t", "--profile", "--profiles-dir", "--vars")


def statistics_args(target: Path, extra: Sequence[str] = ()) -> list[str]:
    """Row counts and sizes of the built tables (macros/docs/compute_table_statistics.sql), for the catalog.

    Of ``extra`` (the user's ``docs generate`` arguments) only the connection and variable
    options are passed on: node selection means nothing to an operation.
    """
    shared: list[str] = []
    for position, arg in enumerate(extra):
        name = arg.split("=", 1)[0]
        if name in SHARED_OPTIONS:
            shared.append(arg)
            if "=" not in arg and position + 1 < len(extra):
                shared.append(extra[position + 1])
    return ["run-operation", "compute_table_statistics", "--target-path", str(target), *shared]


def build_site(
    settings: Settings,
    empty_catalog: bool = False,
    extra_dbt_args: Sequence[str] = (),
    dbt: DbtRunner = _default_dbt,
    skip_generate: bool = False,
) -> SiteSummary:
    """Run ``dbt docs generate --static`` (unless ``skip_generate``) and install the site."""
    target = dbt_target_dir()
    if not skip_generate and not empty_catalog:
        code = dbt(statistics_args(target, extra_dbt_args))
        if code != 0:
            raise DocsBuildError(
                f"computing table statistics failed (exit code {code}); see the dbt output or {target.parent}/logs"
            )
    if not skip_generate:
        code = dbt(generate_args(target, empty_catalog, extra_dbt_args))
        if code != 0:
            raise DocsBuildError(
                f"dbt docs generate failed (exit code {code}); see the dbt output above or {target.parent}/logs"
            )
    missing = [name for name in REQUIRED_FILES if not (target / name).is_file()]
    if missing:
        raise DocsBuildError(f"dbt target {target} lacks {', '.join(missing)}: run 'lakehouse docs build'")
    return install_site(target, site_dir(settings))


def install_site(target: Path, destination: Path) -> SiteSummary:
    """Copy the site files from a dbt target directory into ``destination`` atomically."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = destination.with_name(destination.name + ".new")
    old = destination.with_name(destination.name + ".old")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    files = {}
    for name in SITE_FILES:
        source = target / name
        if source.is_file():
            shutil.copy2(source, staging / name)
            files[name] = source.stat().st_size
    shutil.rmtree(old, ignore_errors=True)
    if destination.exists():
        destination.rename(old)
    staging.rename(destination)
    shutil.rmtree(old, ignore_errors=True)
    return summarize(destination, files)


def check_site_files(directory: Path, names: Sequence[str] = REQUIRED_FILES) -> None:
    missing = [name for name in names if not (directory / name).is_file()]
    if missing:
        raise DocsBuildError(
            f"no complete docs site in {directory} (missing {', '.join(missing)}): run 'lakehouse docs build'"
        )


def summarize(directory: Path, files: dict[str, int] | None = None) -> SiteSummary:
    manifest = json.loads((directory / "manifest.json").read_text())
    nodes = manifest.get("nodes", {}).values()
    docs = manifest.get("docs", {})
    return SiteSummary(
        site_dir=directory,
        files=files or {p.name: p.stat().st_size for p in directory.iterdir() if p.is_file()},
        models=sum(1 for n in nodes if n.get("resource_type") == "model"),
        sources=len(manifest.get("sources", {})),
        exposures=len(manifest.get("exposures", {})),
        has_overview=any(d.get("name") == "__overview__" and d.get("package_name") != "dbt" for d in docs.values()),
    )
