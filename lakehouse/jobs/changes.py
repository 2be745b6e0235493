"""What a scheduled dbt step has to build: the lineage of the bronze tables that changed.

A dbt step with ``only_changed_sources: true`` (the ``hourly`` job's build) compares each bronze
table's newest completed Hudi instant, read from its timeline (a listing of ``.hoodie/``, no
query), with the instants recorded when the step last succeeded:

- none changed: the step does not run (nothing to do costs nothing: no dbt start, no Hudi write);
- some changed: its ``--select`` terms are intersected with those tables' sources and their
  descendants (``tag:silver,source:ecomm.sale+``), so a run where only ``sale`` changed builds
  and tests only what depends on ``sale``;
- no record yet (the step's first run, another lake): the step runs as written.

The instants are read before the step starts and recorded only when it succeeds: a commit
that lands during the build, or a failed build, is built again by the next run (the state
merges are idempotent). Models with no bronze ancestor are left to the unnarrowed builds
(``nightly``). A person's ``lakehouse dbt build`` is never narrowed.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ingestion import files

#: completed instants of actions that change a table's rows (``<instant>.<action>`` in ``.hoodie/``)
_WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")


class ChangedSourcesError(ValueError):
    """The step cannot be narrowed to the changed sources (names the step's arguments and why)."""


def latest_instant(table_location: str) -> str | None:
    """The newest completed write instant on a Hudi table's active timeline (None: none yet)."""
    instants = []
    for name in files.child_names(files.join(table_location, ".hoodie")):
        instant, _, action = name.partition(".")
        if action in _WRITE_ACTIONS and instant.isdigit():
            instants.append(instant)
    return max(instants, default=None)


def bronze_instants(lake: str, tables: list[str]) -> dict[str, str | None]:
    """Each bronze table's newest completed write instant."""
    return {table: latest_instant(files.join(lake, "bronze", table)) for table in tables}


def bronze_sources(project_dir: Path) -> dict[str, str]:
    """Bronze table -> its dbt source (``ecomm.sale``), from the staging sources' YAML."""
    found: dict[str, str] = {}
    for path in sorted((project_dir / "models").rglob("*.yml")):
        document = yaml.safe_load(path.read_text()) or {}
        for source in document.get("sources") or []:
            for table in source.get("tables") or []:
                found[str(table.get("identifier") or table["name"])] = f"{source['name']}.{table['name']}"
    return found


def narrowed_args(args: list[str], sources: list[str]) -> list[str]:
    """``args`` of a dbt command with its selection intersected with ``sources`` and their descendants."""
    if "--selector" in args:
        raise ChangedSourcesError(f"{' '.join(args)}: only_changed_sources needs --select terms, not --selector")
    lineage = [f"source:{source}+" for source in sources]
    out: list[str] = []
    index, selected = 0, False
    while index < len(args):
        arg = args[index]
        if arg in ("--select", "-s", "--models", "-m"):
            terms = []
            index += 1
            while index < len(args) and not args[index].startswith("-"):
                terms.extend(args[index].split())
                index += 1
            out += ["--select", *(f"{term},{source}" for term in terms for source in lineage)]
            selected = True
            continue
        out.append(arg)
        index += 1
    return out if selected else [*out, "--select", *lineage]


class BuiltInstants:
    """The bronze instants a step's last successful run started from (``jobs/<job>/built/step-N.json``)."""

    def __init__(self, job_dir: Path, step_index: int, lake: str):
        self.path = job_dir / "built" / f"step-{step_index}.json"
        self.lake = lake

    def load(self) -> dict[str, str | None] | None:
        try:
            record = json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return record.get("instants") if record.get("lake") == self.lake else None

    def save(self, instants: dict[str, str | None]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(self.path.name + ".tmp")
        temp.write_text(json.dumps({"lake": self.lake, "instants": instants}, indent=1, sort_keys=True))
        temp.replace(self.path)


def changed_tables(before: dict[str, str | None], now: dict[str, str | None]) -> list[str]:
    """Tables whose newest instant differs from the recorded one (new tables included)."""
    return sorted(table for table, instant in now.items() if instant != before.get(table))
