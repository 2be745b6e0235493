"""``lakehouse tables add``: onboard a new source table from its contract, end to end.

From one generated contract entry (``ingestion.cdc.contract_generator``: a schema-carrying
Debezium event or the table's topic) this writes every file a table needs, in the
project's conventions (docs/adding-a-table.md):

1. the contract entry, appended to ``ingestion/cdc/contracts/<system>.yml``;
2. the dbt source table, appended to ``models/staging/<system>/_<system>__sources.yml``
   (the contract's bronze columns, then Hudi's meta columns, as the drift tests require);
3. the staging model ``stg_<system>__<entity>.sql`` and its YAML;
4. the state model ``<entity>_cdc_state.sql``, the published ``<entity>.sql`` and their YAML;
5. the staging model in the two singular tests that list every entity.

Column names stay the source's (silver renames are a hand edit later); descriptions are
placeholders (``PLACEHOLDER``) to fill in. Nothing is written when any file would not take
the new table (it exists, the system's file is missing or of another connector): the
checks run first. The YAML entries are appended as text, so every existing line, comment
and style stays as it is; each new text is parsed before anything is written, to prove the
entry lands where dbt reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ingestion.cdc.contract_generator import GeneratedTable
from ingestion.cdc.contracts import BRONZE_METADATA_COLUMNS

#: The description every generated column and model starts with, until someone writes one.
PLACEHOLDER = "TODO: describe"
HOODIE_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
                  "_hoodie_file_name")
#: Metadata columns of each generated model, whose YAML entries are copied from an existing model.
STAGING_METADATA = ("cdc_op", "is_deleted", "is_truncate", "cdc_position", "cdc_order", "cdc_source_ts", "cdc_tx_id",
                    "cdc_source_db", "cdc_source_table", "kafka_topic", "kafka_partition", "kafka_offset",
                    "landing_file", "ingested_at", "source_date", "bronze_commit_time")
STATE_METADATA = ("cdc_op", "is_deleted", "is_truncate", "cdc_position", "cdc_order", "cdc_source_ts",
                  "bronze_commit_time", "state_key")
SILVER_METADATA = ("cdc_position", "last_changed_at", "bronze_commit_time")
#: The staging banner of each contract type (the staging models' layout).
_BANNERS = (("ids", None), ("strings", ("string",)), ("numerics", ("int", "bigint", "double", "decimal")),
            ("booleans", ("boolean",)), ("dates", ("date", "timestamp")))


class OnboardingError(ValueError):
    """The project cannot take the table (names the file and the problem)."""


@dataclass(frozen=True)
class Onboarding:
    """One new table of source system ``system``, published as silver model ``entity``."""

    table: GeneratedTable
    system: str
    entity: str

    @property
    def staging(self) -> str:
        return f"stg_{self.system}__{self.entity}"

    @property
    def state(self) -> str:
        return f"{self.entity}_cdc_state"


def plural(name: str) -> str:
    """The default silver name of a table: ``performer`` -> ``performers``, ``category`` -> ``categories``;
    a name that already ends in ``s`` (``customers``) stays."""
    if name.endswith("s"):
        return name
    if name.endswith("y") and name[-2:-1] not in "aeiou":
        return name[:-1] + "ies"
    return name + ("es" if name.endswith(("x", "ch", "sh")) else "s")


def onboard(project: Path, table: GeneratedTable, system: str, entity: str | None = None) -> list[Path]:
    """Write the table's files into ``project`` (the repository root); the paths written."""
    plan = Onboarding(table, system, entity or plural(table.name))
    writes = _plan(project, plan)
    _check_planned(project, plan, writes)
    for path, text in writes:
        path.write_text(text)
    return [path for path, _ in writes]


def _plan(project: Path, plan: Onboarding) -> list[tuple[Path, str]]:
    """(path, new content) of every file, after every check passed."""
    t, system = plan.table, plan.system
    contracts = project / "ingestion" / "cdc" / "contracts" / f"{system}.yml"
    staging_dir = project / "models" / "staging" / system
    sources = staging_dir / f"_{system}__sources.yml"
    staging_yaml = staging_dir / f"_{system}__models.yml"
    state_yaml = project / "models" / "silver" / "state" / "_state__models.yml"
    silver_yaml = project / "models" / "silver" / "_silver__models.yml"
    new_files = [staging_dir / f"{plan.staging}.sql", project / "models" / "silver" / "state" / f"{plan.state}.sql",
                 project / "models" / "silver" / f"{plan.entity}.sql"]
    lists = [project / "tests" / "dbt" / "assert_one_kafka_partition_per_key.sql",
             project / "tests" / "dbt" / "assert_silver_key_counts_match_bronze.sql"]
    for path in [contracts, sources, staging_yaml, state_yaml, silver_yaml, *lists]:
        if not path.is_file():
            raise OnboardingError(f"{path}: missing (is {project} the project's root, and {system!r} its system?)")
    for path in new_files:
        if path.exists():
            raise OnboardingError(f"{path}: exists already")
    doc = yaml.safe_load(contracts.read_text())
    if doc.get("connector") != t.connector:
        raise OnboardingError(f"{contracts}: connector {doc.get('connector')!r}, "
                              f"the table's events are {t.connector!r}")
    if t.name in (doc.get("tables") or {}):
        raise OnboardingError(f"{contracts}: table {t.name!r} is there already")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", plan.entity):
        raise OnboardingError(f"entity {plan.entity!r}: lower-case letters, digits and _ only")
    key = t.primary_key
    return [
        (contracts, _append(contracts, _contract_entry(t))),
        (sources, _append(sources, _list_item(_source_entry(t), _item_indent(sources, "- name:", 6)))),
        (new_files[0], _staging_sql(plan)),
        (staging_yaml, _append(staging_yaml, _list_item(_staging_entry(plan, staging_yaml),
                                                        _item_indent(staging_yaml)))),
        (new_files[1], _state_sql(plan)),
        (state_yaml, _append(state_yaml, _list_item(_state_entry(plan, state_yaml), _item_indent(state_yaml)))),
        (new_files[2], _silver_sql(plan)),
        (silver_yaml, _append(silver_yaml, _list_item(_silver_entry(plan, silver_yaml), _item_indent(silver_yaml)))),
        (lists[0], _add_to_list(lists[0], f"('{plan.staging}', '{key[0]}')")),
        (lists[1], _add_to_list(lists[1], f"('{plan.entity}', '{plan.staging}', '{key[0]}')")),
    ]


def _append(path: Path, fragment: str) -> str:
    text = path.read_text()
    return text + ("" if text.endswith("\n") else "\n") + fragment


def _item_indent(path: Path, marker: str = "- name:", nested: int | None = None) -> int:
    """The indentation of the list items the entry joins: the last ``marker`` line at the
    outermost (``nested``: exactly that) indentation."""
    indents = [len(line) - len(line.lstrip()) for line in path.read_text().splitlines()
               if line.lstrip().startswith(marker)]
    if not indents:
        raise OnboardingError(f"{path}: no list of entries to append to")
    return nested if nested is not None and nested in indents else min(indents)


def _list_item(entry: dict[str, Any], indent: int) -> str:
    text = yaml.safe_dump([entry], sort_keys=False, width=110, allow_unicode=True, default_flow_style=False)
    return "".join(" " * indent + line if line.strip() else line for line in text.splitlines(keepends=True))


def _describe(name: str) -> str:
    return f"{PLACEHOLDER} {name}."


def _contract_entry(t: GeneratedTable) -> str:
    lines = [f"  {t.name}:", f"    topics: [{t.topic}]", f"    primary_key: [{', '.join(t.primary_key)}]",
             "    columns:"]
    lines += [f'      - {{name: {c.name}, type: {c.type}, description: "{_describe(c.name)}"}}' for c in t.columns]
    return "\n".join(lines) + "\n"


def _source_entry(t: GeneratedTable) -> dict[str, Any]:
    columns: list[dict[str, Any]] = []
    for column in t.columns:
        entry: dict[str, Any] = {"name": column.name, "description": _describe(column.name), "data_type": column.type}
        if column.name in t.primary_key:
            entry["data_tests"] = [{"not_null": {"config": {"where": "_cdc_op <> 't'"}}}]
        columns.append(entry)
    columns += [{"name": name, "description": f"Bronze change metadata `{name}` (docs/architecture.md).",
                 "data_type": kind} for name, kind in BRONZE_METADATA_COLUMNS]
    columns += [{"name": name, "description": f"Hudi's `{name}` meta column.", "data_type": "string"}
                for name in HOODIE_COLUMNS]
    return {"name": t.name, "description": f"Change log of `{t.database}.{t.schema or t.database}.{t.name}` "
                                           f"(topics {t.topic}).",
            "data_tests": [{"not_null_columns": {"arguments": {"columns": ["_cdc_op", "_cdc_position",
                                                                           "_cdc_ingested_at"]}}}],
            "columns": columns}


def _staging_sql(plan: Onboarding) -> str:
    t = plan.table
    groups: list[str] = []
    for banner, kinds in _BANNERS:
        names = [c.name for c in t.columns
                 if (c.name in t.primary_key if kinds is None else
                     c.name not in t.primary_key and c.type.split("(")[0] in kinds)]
        if names:
            groups.append(f"        ----------  {banner}\n" + "".join(f"        {n},\n" for n in names))
    body = "\n".join(groups)
    return (f"with\n\nsource as (\n\n    select * from {{{{ source('{plan.system}', '{t.name}') }}}}\n\n),\n\n"
            f"renamed as (\n\n    select\n\n{body}\n"
            "        ----------  change metadata, then the columns the source added\n"
            f"        {{{{ cdc_metadata_columns('{plan.system}', '{t.name}') }}}}\n\n"
            "    from source\n\n)\n\nselect * from renamed\n")


def _column_list(names: list[str]) -> str:
    return "".join(f"        '{name}',\n" for name in names)


def _state_sql(plan: Onboarding) -> str:
    t = plan.table
    toastable = [c.name for c in t.columns if c.type == "string"] if t.connector == "postgres" else []
    toast = f"    toastable_columns=[\n{_column_list(toastable)}    ],\n" if toastable else ""
    return (f"{{#- Latest change event per key of `{t.name}`, tombstones and the latest\n"
            "    truncate kept (see cdc_state). -#}\n"
            f"{{{{ cdc_state(\n    ref('{plan.staging}'),\n"
            f"    primary_key=[{', '.join(repr(k) for k in t.primary_key)}],\n"
            f"    columns=[\n{_column_list([c.name for c in t.columns])}    ],\n{toast}) }}}}\n")


def _silver_sql(plan: Onboarding) -> str:
    t = plan.table
    return (f"{{#- Live {plan.entity}: the latest state of every key that is not deleted\n"
            "    or truncated. -#}\n"
            f"{{{{ cdc_live_rows(\n    ref('{plan.state}'),\n"
            f"    columns=[\n{_column_list([c.name for c in t.columns])}    ],\n) }}}}\n")


def _metadata_entries(path: Path, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The YAML entries of ``names`` as an existing model of ``path`` documents them."""
    for model in yaml.safe_load(path.read_text()).get("models") or []:
        entries = {c["name"]: c for c in model.get("columns") or []}
        if all(name in entries for name in names):
            return [entries[name] for name in names]
    raise OnboardingError(f"{path}: no model documents the metadata columns {', '.join(names)} to copy")


def _key_tests(t: GeneratedTable) -> list[dict[str, Any]]:
    if len(t.primary_key) == 1:
        return []
    return [{"unique_combination_of_columns": {"arguments": {"combination_of_columns": list(t.primary_key)}}}]


def _entity_columns(t: GeneratedTable, key_tests: bool, where: str | None = None) -> list[dict[str, Any]]:
    columns: list[dict[str, Any]] = []
    for column in t.columns:
        entry: dict[str, Any] = {"name": column.name, "description": _describe(column.name)}
        if column.name in t.primary_key:
            not_null: Any = {"not_null": {"config": {"where": where}}} if where else "not_null"
            entry["data_tests"] = (["unique", not_null] if key_tests and len(t.primary_key) == 1 else [not_null])
        columns.append(entry)
    return columns


def _staging_entry(plan: Onboarding, path: Path) -> dict[str, Any]:
    t = plan.table
    return {"name": plan.staging,
            "description": f"Typed change events of `{t.name}` from bronze: one row per change event (several per "
                           f"key), including deletes and truncates. Latest state per key is built in silver "
                           f"(`{plan.entity}`).",
            "data_tests": [{"not_null_columns": {"arguments": {"columns": ["cdc_op", "is_deleted", "is_truncate",
                                                                           "cdc_position", "cdc_order",
                                                                           "bronze_commit_time"]}}},
                           {"unique_combination_of_columns": {"arguments": {
                               "combination_of_columns": [*t.primary_key, "cdc_position"]}}}],
            "columns": _entity_columns(t, False, "not is_truncate") + _metadata_entries(path, STAGING_METADATA)}


def _state_entry(plan: Onboarding, path: Path) -> dict[str, Any]:
    t = plan.table
    return {"name": plan.state,
            "description": f"CDC state of `{t.name}`: the latest change event of every key including tombstones "
                           "and the latest truncate. Incremental; see {{ doc('silver_incremental') }}",
            "data_tests": [{"not_null_columns": {"arguments": {"columns": ["is_deleted", "is_truncate",
                                                                           "cdc_position", "cdc_order",
                                                                           "bronze_commit_time", "state_key"]}}}],
            "columns": [{"name": c.name, "description": _describe(c.name)} for c in t.columns]
            + _metadata_entries(path, STATE_METADATA)}


def _silver_entry(plan: Onboarding, path: Path) -> dict[str, Any]:
    t = plan.table
    entry: dict[str, Any] = {
        "name": plan.entity,
        "description": f"Live {plan.entity}: the latest state of every key from the `{t.name}` change log; deleted "
                       f"and truncated keys are absent. A view over `{plan.state}`. "
                       "{{ doc('silver_semantics') }}"}
    # warns while a column is undescribed (the placeholders, and columns the source adds later)
    entry["data_tests"] = ["columns_are_documented", *_key_tests(t)]
    entry["columns"] = _entity_columns(t, True) + _metadata_entries(path, SILVER_METADATA)
    return entry


def _add_to_list(path: Path, item: str) -> str:
    """``path`` with ``item`` as the last entry of its ``{%- set entities = [...] %}`` list."""
    text = path.read_text()
    end = text.find("] %}")
    if end < 0 or "set entities = [" not in text[:end]:
        raise OnboardingError(f"{path}: no `set entities = [...]` list")
    return text[:end] + f"    {item},\n" + text[end:]


def _check_planned(project: Path, plan: Onboarding, writes: list[tuple[Path, str]]) -> None:
    """Before anything is written: each new YAML text parses and holds the new entry where dbt
    (or the contract loader) reads it."""
    import tempfile

    from ingestion.cdc.contracts import load_contracts

    texts = {path: text for path, text in writes}
    contracts_file = project / "ingestion" / "cdc" / "contracts" / f"{plan.system}.yml"
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / contracts_file.name).write_text(texts[contracts_file])
        if plan.table.name not in load_contracts.__wrapped__(Path(scratch)):
            raise OnboardingError(f"{contracts_file}: the new entry does not load")
    staging_dir = project / "models" / "staging" / plan.system
    sources = yaml.safe_load(texts[staging_dir / f"_{plan.system}__sources.yml"])["sources"]
    if not any(t["name"] == plan.table.name for s in sources if s["name"] == plan.system for t in s["tables"]):
        raise OnboardingError(f"{staging_dir}: the new table would not be under source {plan.system!r}")
    for path, name in ((staging_dir / f"_{plan.system}__models.yml", plan.staging),
                       (project / "models" / "silver" / "state" / "_state__models.yml", plan.state),
                       (project / "models" / "silver" / "_silver__models.yml", plan.entity)):
        if name not in [m["name"] for m in yaml.safe_load(texts[path])["models"]]:
            raise OnboardingError(f"{path}: {name} would not be among its models")
