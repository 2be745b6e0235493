"""What a scheduled dbt step has to build: the lineage of the bronze tables that changed.

A dbt step with ``only_changed_sources: true`` (the ``hourly`` job's build) compares each bronze
table's newest completed Hudi instant, read from its timeline (a listing of ``.hoodie/``, no
query), with the instants recorded when the step last succeeded:

- none changed: the step does not run (nothing to do costs nothing: no dbt start, no Hudi write);
- some changed: its ``--select`` terms are intersected with those tables' sources and their
  descendants (``tag:silver,source:ecomm.sale+``), so a run where only ``sale`` changed builds
  and tests only what depends on ``sale``;
- no record yet (the step's first run, another lake): the step runs as written.

A narrowed step leaves out the **views** whose definition is unchanged: a view is a stored
query, so new rows beneath it need no new view, and re-creating one costs Spark an analysis of
every relation beneath it (half an incremental run's node seconds, ``docs/performance.md``).
Their tests still run. A view is re-created when

- its definition changed since the step last succeeded (dbt's ``state:modified+``, compared
  with the manifest saved on that success; every view in the lineage while none is saved), or
- the columns of a bronze table beneath it changed (an added or widened column: Spark stores a
  view's column types and refuses to read a widened column through the old view), from the
  schema in the table's newest commit; the views the selection reads are re-created then,
  staging ones included.

The instants are read before the step starts and recorded only when it succeeds: a commit
that lands during the build, or a failed build, is built again by the next run (the state
merges are idempotent). Models with no bronze ancestor are left to the unnarrowed builds
(``nightly``). A person's ``lakehouse dbt build`` is never narrowed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import yaml

from ingestion import files

#: completed instants of actions that change a table's rows (``<instant>.<action>`` in ``.hoodie/``)
_WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")
#: commits read back, newest first, to find one that records the table's schema
_SCHEMA_LOOKBACK = 5
#: what a narrowed step keeps of its selection besides views (every other node dbt runs from a source)
KEPT_KINDS = (
    "config.materialized:incremental",
    "config.materialized:table",
    "config.materialized:snapshot",
    "resource_type:test",
    "resource_type:unit_test",
)
VIEWS = "config.materialized:view"


class ChangedSourcesError(ValueError):
    """The step cannot be narrowed to the changed sources (names the step's arguments and why)."""


def _write_instants(table_location: str) -> list[tuple[str, str]]:
    """(instant, action) of the completed writes on a Hudi table's active timeline, oldest first."""
    found = []
    for name in files.child_names(files.join(table_location, ".hoodie")):
        instant, _, action = name.partition(".")
        if action in _WRITE_ACTIONS and instant.isdigit():
            found.append((instant, action))
    return sorted(found)


def latest_instant(table_location: str) -> str | None:
    """The newest completed write instant on a Hudi table's active timeline (None: none yet)."""
    instants = _write_instants(table_location)
    return instants[-1][0] if instants else None


def schema_fingerprint(table_location: str) -> str | None:
    """A digest of the columns (names and Avro types) the table's newest commit that records a
    schema wrote with; None when no recent commit records one."""
    for instant, action in reversed(_write_instants(table_location)[-_SCHEMA_LOOKBACK:]):
        try:
            metadata = json.loads(files.read_text(files.join(table_location, ".hoodie", f"{instant}.{action}")) or "{}")
            schema = (metadata.get("extraMetadata") or {}).get("schema")
            columns = [[column["name"], column["type"]] for column in json.loads(schema)["fields"]] if schema else None
        except (ValueError, KeyError, TypeError):
            continue
        if columns:
            return hashlib.sha256(json.dumps(columns, sort_keys=True).encode()).hexdigest()[:16]
    return None


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


def _upstream(term: str) -> str:
    """``term`` with its ancestors (``+tag:silver``), unless it already names a graph of its own."""
    return term if term[:1] in "+@" or term[:1].isdigit() else f"+{term}"


def narrowed_args(args: list[str], sources: list[str], reshaped: list[str] | None = None,
                  state: Path | None = None) -> list[str]:
    """``args`` of a dbt command with its selection intersected with ``sources`` and their descendants,
    views left out unless their definition changed since ``state`` (the manifest of the step's last
    success; None: every view of the lineage) or a ``reshaped`` source (columns changed) is beneath them."""
    if "--selector" in args:
        raise ChangedSourcesError(f"{' '.join(args)}: only_changed_sources needs --select terms, not --selector")
    out: list[str] = []
    terms: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("--select", "-s", "--models", "-m"):
            index += 1
            while index < len(args) and not args[index].startswith("-"):
                terms.extend(args[index].split())
                index += 1
            continue
        out.append(arg)
        index += 1
    scopes = terms or [""]
    lineage = [f"source:{source}+" for source in sources]
    selection = [",".join(filter(None, (term, source, kind)))
                 for term in scopes for source in lineage for kind in KEPT_KINDS]
    upstream = [_upstream(term) if term else "" for term in scopes]
    view_lineage = lineage if state is None else [f"source:{source}+" for source in reshaped or []]
    selection += [",".join(filter(None, (term, source, VIEWS))) for term in upstream for source in view_lineage]
    if state is not None:
        selection += [",".join(filter(None, (term, "state:modified+", VIEWS))) for term in upstream]
        out += ["--state", str(state)]
    command = out[:1] if out and not out[0].startswith("-") else []  # build, run, ...
    return [*command, "--select", *selection, *out[len(command):]]


@dataclass(frozen=True)
class Built:
    """What a step's last success started from: each bronze table's newest instant and schema."""

    instants: dict[str, str | None]
    schemas: dict[str, str | None] = field(default_factory=dict)


class BuiltRecord:
    """The bronze instants and schemas a step's last successful run started from
    (``jobs/<job>/built/step-N.json``) and that run's dbt manifest (``built/step-N/manifest.json``)."""

    def __init__(self, job_dir: Path, step_index: int, lake: str):
        self.path = job_dir / "built" / f"step-{step_index}.json"
        self.state_dir = job_dir / "built" / f"step-{step_index}"
        self.lake = lake

    def load(self) -> Built | None:
        try:
            record = json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return None
        if record.get("lake") != self.lake:
            return None
        return Built(record.get("instants") or {}, record.get("schemas") or {})

    def state(self) -> Path | None:
        """The directory of the manifest saved on the last success (dbt's ``--state``), if any was
        written by the dbt installed now (another version's manifest is not compared: every view
        of the lineage is re-created once, and the step records this version's)."""
        try:
            manifest = json.loads((self.state_dir / "manifest.json").read_text())
        except (FileNotFoundError, ValueError):
            return None
        written_by = (manifest.get("metadata") or {}).get("dbt_version")
        return self.state_dir if written_by == version("dbt-core") else None

    def save(self, built: Built, manifest: Path | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if manifest is not None and manifest.is_file():
            self.state_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(manifest, self.state_dir / "manifest.json.tmp")
            (self.state_dir / "manifest.json.tmp").replace(self.state_dir / "manifest.json")
        temp = self.path.with_name(self.path.name + ".tmp")
        temp.write_text(json.dumps({"lake": self.lake, "instants": built.instants, "schemas": built.schemas},
                                   indent=1, sort_keys=True))
        temp.replace(self.path)


def changed_tables(before: dict[str, str | None], now: dict[str, str | None]) -> list[str]:
    """Tables whose newest instant differs from the recorded one (new tables included)."""
    return sorted(table for table, instant in now.items() if instant != before.get(table))


@dataclass(frozen=True)
class Narrowing:
    """A step's dbt arguments for the bronze tables that changed, and what to record on its success."""

    args: list[str]
    changed: list[str]
    reshaped: list[str]
    built: Built


def bronze_built(lake: str, tables: list[str]) -> Built:
    """Each bronze table's newest instant and schema now: what a step that builds them all records."""
    return Built(bronze_instants(lake, tables),
                 {table: schema_fingerprint(files.join(lake, "bronze", table)) for table in tables})


def narrow(args: list[str], lake: str, sources: dict[str, str], before: Built | None,
           state: Path | None) -> Narrowing | None:
    """The step's arguments narrowed to the bronze tables changed since ``before`` (None: nothing
    changed; ``args`` as written when there is no record yet)."""
    tables = sorted(sources)
    if before is None:
        return Narrowing(list(args), tables, [], bronze_built(lake, tables))
    instants = bronze_instants(lake, tables)
    changed = changed_tables(before.instants, instants)
    if not changed:
        return None
    schemas = dict(before.schemas)
    for table in changed:
        schemas[table] = schema_fingerprint(files.join(lake, "bronze", table))
    # a record without schemas (written before they were kept) counts every changed table as reshaped
    reshaped = [table for table in changed if table not in before.schemas or schemas[table] != before.schemas[table]]
    narrowed = narrowed_args(list(args), [sources[table] for table in changed],
                             [sources[table] for table in reshaped], state)
    return Narrowing(narrowed, changed, reshaped, Built(instants, schemas))
