"""The dbt project's structure rules, checked on dbt's own manifest (`dbt parse`, no warehouse).

The rules of the dbt-project-evaluator (dbt-labs/dbt-project-evaluator) that fit this
project, as plain tests (the package itself needs a warehouse run and is not installed).
Each test fails with the offending nodes named.

Naming by layer (rule 1), the declared conventions:

- staging: ``stg_<system>__<entities>`` in ``models/staging/<system>/``;
- silver, published: ``<entities>`` in ``models/silver/`` (no prefix: the names people query);
- silver, state: the declared suffix ``_cdc_state`` in ``models/silver/state/`` instead of the
  evaluator's ``int_`` prefix: ``<entities>_cdc_state`` holds the CDC state behind the published
  ``<entities>`` (also declared in ``models/silver/state/_state__models.yml``);
- gold: ``dim_`` in ``models/gold/dimensions/``, ``fct_`` in ``facts/``, ``rpt_`` in ``reports/``;
- intermediate: ``int_`` in a folder named ``intermediate`` (none today).

The other rules: one models YAML per model folder (2), a tested primary key on every model and
the staging grain (3), sources read only by staging and no hard-coded relations (4), fan-out
documented (5), source freshness set or explicitly off with a reason (6).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path, PurePosixPath

import pytest
import yaml

from ingestion.cdc.contracts import load_contracts
from tests.dbt_project.dbt_runner import DBT, PROJECT_DIR
from tests.dbt_project.silver_oracle import silver_columns

#: A model with more direct children (models, snapshots, exposures) must say why in meta.fanout.
FANOUT_THRESHOLD = 3
#: The schemas of the layers: a relation named with one of them in SQL is hard-coded.
LAYER_SCHEMAS = ("bronze", "staging", "silver", "gold", "seeds", "snapshots", "default")
#: YAML files under models/ are `_<folder>__<kind>.yml`, holding only that kind of resource.
YAML_KINDS = {"models": "models", "sources": "sources", "exposures": "exposures", "unit_tests": "unit_tests"}


@pytest.fixture(scope="session")
def manifest(tmp_path_factory) -> dict:
    """dbt's manifest of the project, from one `dbt parse` (the default target; no connection)."""
    work = tmp_path_factory.mktemp("dbt_parse")
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    env.pop("DBT_PROFILES_DIR", None)
    env.pop("LAKEHOUSE_DBT_TARGET", None)
    result = subprocess.run(
        [str(DBT), "parse", "--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR / "profiles"),
         "--target-path", str(work / "target"), "--log-path", str(work / "logs")],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"dbt parse failed:\n{(result.stdout + result.stderr)[-4000:]}"
    return json.loads((work / "target" / "manifest.json").read_text())


def _models(manifest: dict) -> dict[str, dict]:
    """Models of this project by name."""
    return {n["name"]: n for n in manifest["nodes"].values()
            if n["resource_type"] == "model" and n["package_name"] == "lakehouse"}


def _folder(node: dict) -> PurePosixPath:
    return PurePosixPath(node["original_file_path"]).parent


def _is_staging(node: dict) -> bool:
    return _folder(node).parts[:2] == ("models", "staging")


def _report(problems: list[str]) -> str:
    return "\n  " + "\n  ".join(problems)


# ---------------------------------------------------------------- 1. naming by layer

def _expected_name(folder: PurePosixPath) -> tuple[str, str] | None:
    """(regex a model name in `folder` must match, the convention in words), or None: no layer."""
    parts = folder.parts
    if parts and parts[-1] == "intermediate":
        return r"int_[a-z][a-z0-9_]*", "int_<entity>_<verb>"
    if len(parts) == 3 and parts[:2] == ("models", "staging"):
        return rf"stg_{parts[2]}__[a-z][a-z0-9_]*", f"stg_{parts[2]}__<entities>"
    if parts == ("models", "silver"):
        return r"(?!(?:stg|int|dim|fct|rpt)_)(?!.*_cdc_state$)[a-z][a-z0-9_]*", "<entities> (no prefix)"
    if parts == ("models", "silver", "state"):
        return r"[a-z][a-z0-9_]*_cdc_state", "<entities>_cdc_state"
    prefixes = {"dimensions": "dim_", "facts": "fct_", "reports": "rpt_"}
    if len(parts) == 3 and parts[:2] == ("models", "gold") and parts[2] in prefixes:
        return rf"{prefixes[parts[2]]}[a-z][a-z0-9_]*", f"{prefixes[parts[2]]}<name>"
    return None


def test_model_names_follow_their_layer(manifest) -> None:
    problems = []
    for name, node in sorted(_models(manifest).items()):
        expected = _expected_name(_folder(node))
        if expected is None:
            problems.append(f"{name}: {node['original_file_path']} is in no declared layer folder")
        elif not re.fullmatch(expected[0], name):
            problems.append(f"{name}: a model in {_folder(node)}/ is named {expected[1]}")
    assert not problems, _report(problems)


def test_every_state_model_backs_its_published_silver_model(manifest) -> None:
    """`<entities>_cdc_state` is read by the published `<entities>` (and `<entities>` reads it)."""
    models = _models(manifest)
    problems = []
    for name, node in sorted(models.items()):
        if _folder(node) != PurePosixPath("models/silver/state"):
            continue
        published = models.get(name.removesuffix("_cdc_state"))
        if published is None or _folder(published) != PurePosixPath("models/silver"):
            problems.append(f"{name}: no published silver model {name.removesuffix('_cdc_state')}")
        elif node["unique_id"] not in published["depends_on"]["nodes"]:
            problems.append(f"{published['name']}: does not read its state model {name}")
    assert not problems, _report(problems)


# ---------------------------------------------------------------- 2. one models YAML per folder

def _yaml_kind(path: Path) -> str | None:
    match = re.fullmatch(rf"_{re.escape(path.parent.name)}__([a-z_]+)\.yml", path.name)
    return match.group(1) if match else None


def test_yaml_files_are_named_after_their_folder_and_kind() -> None:
    """`_<folder>__models.yml`, `_<folder>__sources.yml`, ... each holding only its kind."""
    problems = []
    for path in sorted((PROJECT_DIR / "models").rglob("*.y*ml")):
        relative = path.relative_to(PROJECT_DIR)
        kind = _yaml_kind(path)
        if kind not in YAML_KINDS:
            problems.append(f"{relative}: not named _{path.parent.name}__<{'|'.join(YAML_KINDS)}>.yml")
            continue
        keys = set(yaml.safe_load(path.read_text()) or {}) - {"version"}
        if keys - {YAML_KINDS[kind]}:
            problems.append(f"{relative}: holds {sorted(keys - {YAML_KINDS[kind]})}, a {kind} YAML holds {kind} only")
    assert not problems, _report(problems)


def test_one_models_yaml_per_model_folder(manifest) -> None:
    """Every model is documented in `_<folder>__models.yml` of its own folder, the only models YAML there."""
    problems = []
    folders = set()
    for name, node in sorted(_models(manifest).items()):
        folder = _folder(node)
        folders.add(folder)
        expected = f"lakehouse://{folder}/_{folder.name}__models.yml"
        if node["patch_path"] != expected:
            problems.append(f"{name}: documented in {node['patch_path']}, expected {expected}")
    for path in sorted((PROJECT_DIR / "models").rglob("*.yml")):
        if "models" in (yaml.safe_load(path.read_text()) or {}):
            folder = PurePosixPath(path.parent.relative_to(PROJECT_DIR).as_posix())
            if folder not in folders:
                problems.append(f"{folder}/{path.name}: a models YAML in a folder without models")
    assert not problems, _report(problems)


def test_every_model_and_column_is_described(manifest) -> None:
    problems = []
    for name, node in sorted(_models(manifest).items()):
        if not node["description"].strip():
            problems.append(f"{name}: no description")
        if not node["columns"]:
            problems.append(f"{name}: no columns documented")
        problems += [f"{name}.{column}: no description" for column, spec in node["columns"].items()
                     if not spec["description"].strip()]
    assert not problems, _report(problems)


# ---------------------------------------------------------------- 3. primary keys

def _tests_by_model(manifest: dict) -> dict[str, list[dict]]:
    tests = defaultdict(list)
    for node in manifest["nodes"].values():
        if node["resource_type"] == "test" and node.get("test_metadata") and node.get("attached_node"):
            tests[node["attached_node"]].append(node)
    return tests


def _key_tests(tests: list[dict]) -> tuple[set[str], set[str], list[list[str]]]:
    """(columns tested unique, columns tested not null, tested unique combinations) of a model.

    Only tests that fail the build count (severity error). A uniqueness test must not be
    filtered by `where`; a not-null test may be (staging keys are null on truncate rows).
    """
    unique, not_null, combinations = set(), set(), []
    for test in tests:
        if str(test["config"].get("severity", "error")).lower() != "error":
            continue
        name, kwargs = test["test_metadata"]["name"], test["test_metadata"]["kwargs"]
        filtered = bool(test["config"].get("where"))
        if name == "unique" and not filtered:
            unique.add(test["column_name"])
        elif name == "not_null":
            not_null.add(test["column_name"])
        elif name == "not_null_columns":
            not_null.update(kwargs["columns"])
        elif name == "unique_combination_of_columns" and not filtered:
            combinations.append(list(kwargs["combination_of_columns"]))
    return unique, not_null, combinations


def test_every_model_has_a_tested_primary_key(manifest) -> None:
    """`unique` + `not_null` on one column, or `unique_combination_of_columns` + not-null on each column."""
    tests = _tests_by_model(manifest)
    problems = []
    for name, node in sorted(_models(manifest).items()):
        unique, not_null, combinations = _key_tests(tests[node["unique_id"]])
        if not (unique & not_null or any(set(c) <= not_null for c in combinations)):
            problems.append(f"{name}: no column tested unique + not_null, no unique combination of not-null "
                            f"columns (unique {sorted(unique)}, not null {sorted(not_null)}, "
                            f"combinations {combinations})")
    assert not problems, _report(problems)


def _staging_primary_keys() -> dict[str, list[str]]:
    """CDC staging model -> its primary-key columns as renamed in staging (from the contracts)."""
    keys = {}
    for table, contract in load_contracts().items():
        relation, renames = silver_columns(table)
        keys[f"stg_{contract.system}__{relation}"] = [renames[column] for column in contract.primary_key]
    return keys


def test_staging_grain_is_primary_key_and_position(manifest) -> None:
    """A CDC staging model has one row per change event: unique (primary key..., cdc_position)."""
    keys = _staging_primary_keys()
    tests = _tests_by_model(manifest)
    problems = []
    for name, node in sorted(_models(manifest).items()):
        if not _is_staging(node) or "cdc_position" not in node["columns"]:
            continue
        if name not in keys:
            problems.append(f"{name}: a CDC staging model without a table contract")
            continue
        grain = [*keys[name], "cdc_position"]
        _, not_null, combinations = _key_tests(tests[node["unique_id"]])
        if grain not in combinations:
            problems.append(f"{name}: no unique_combination_of_columns on {grain} (found {combinations})")
        if not set(grain) <= not_null:
            problems.append(f"{name}: grain columns without a not-null test: {sorted(set(grain) - not_null)}")
    missing = sorted(set(keys) - set(_models(manifest)))
    assert not missing, f"contract tables without a staging model: {missing}"
    assert not problems, _report(problems)


# ---------------------------------------------------------------- 4. dependencies

def test_only_staging_models_read_sources(manifest) -> None:
    problems = []
    for name, node in sorted(_models(manifest).items()):
        sources = [d for d in node["depends_on"]["nodes"] if d.startswith("source.")]
        models = [d for d in node["depends_on"]["nodes"] if d.startswith("model.")]
        if not _is_staging(node) and sources:
            problems.append(f"{name}: reads source(s) {sources}; only staging models read sources")
        if _is_staging(node) and models:
            problems.append(f"{name}: a staging model refs model(s) {models}; staging reads its source only")
        if _is_staging(node) and len(sources) != 1:
            problems.append(f"{name}: a staging model reads {len(sources)} sources, expected exactly one")
    assert not problems, _report(problems)


def test_every_source_table_has_one_staging_model(manifest) -> None:
    """No unused source and no source read twice (the evaluator's unused sources / source fan-out)."""
    problems = []
    for uid, source in sorted(manifest["sources"].items()):
        children = manifest["child_map"].get(uid, [])
        models = [c for c in children if c.startswith("model.")]
        if len(models) != 1:
            problems.append(f"{source['source_name']}.{source['name']}: read by {len(models)} models {models}")
        folder = PurePosixPath(source["original_file_path"]).parent
        if folder != PurePosixPath("models/staging", source["source_name"]):
            problems.append(f"{source['source_name']}: declared in {folder}/, expected models/staging/"
                            f"{source['source_name']}/")
    assert not problems, _report(problems)


_JINJA = re.compile(r"\{#.*?#\}|\{\{.*?\}\}|\{%.*?%\}", re.S)
_SQL_COMMENTS_AND_STRINGS = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^'\\]|\\.)*'", re.S)
#: `from` inside extract(day from t.c), trim(both from t.c), substring(t.c from 2): not a relation
_FUNCTION_FROM = re.compile(r"\b(extract|trim|substring|overlay)\s*\(([^()]*?)\bfrom\b", re.I)
_IDENTIFIER = r"(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"
_HARD_CODED = re.compile(
    rf"\b(?:from|join)\s+{_IDENTIFIER}\s*\.\s*{_IDENTIFIER}"
    rf"|`?\b(?:{'|'.join(LAYER_SCHEMAS)})\b`?\s*\.\s*{_IDENTIFIER}",
    re.I)


def hard_coded_relations(raw_sql: str) -> list[str]:
    """Relation names written out in SQL (outside Jinja, comments and string literals)."""
    sql = _SQL_COMMENTS_AND_STRINGS.sub(" ", _JINJA.sub(" ", raw_sql))
    sql = _FUNCTION_FROM.sub(r"\1(\2", sql)
    return [" ".join(match.split()) for match in _HARD_CODED.findall(sql)]


def test_hard_coded_relations_are_found() -> None:
    assert hard_coded_relations("select * from bronze.sale") == ["from bronze.sale"]
    assert hard_coded_relations("select a from x\njoin `silver`.`users` as u on true") == ["join `silver`.`users`"]
    assert hard_coded_relations("select s.a from {{ ref('sales') }} as s -- from bronze.sale\n") == []
    assert hard_coded_relations("{# staging.stg_x #} select 'gold.x' as a, users.user_id from users") == []
    assert hard_coded_relations("select extract(year from s.sale_time) as y from {{ ref('sales') }} as s") == []


def test_no_hard_coded_relation_names(manifest) -> None:
    """Models, analyses, singular tests and snapshots name relations with ref() and source() only."""
    problems = []
    for node in sorted(manifest["nodes"].values(), key=lambda n: n["unique_id"]):
        if node["package_name"] != "lakehouse" or not node["original_file_path"].endswith(".sql"):
            continue
        found = hard_coded_relations(node["raw_code"])
        if found:
            problems.append(f"{node['resource_type']} {node['name']} ({node['original_file_path']}): {found}")
    assert not problems, _report(problems)


def test_exposures_read_gold_models_and_snapshots_only(manifest) -> None:
    problems = []
    for exposure in manifest["exposures"].values():
        for parent in exposure["depends_on"]["nodes"]:
            node = manifest["nodes"].get(parent) or manifest["sources"].get(parent)
            layer = _folder(node).parts[:2] if node["resource_type"] == "model" else None
            if node["resource_type"] != "snapshot" and layer != ("models", "gold"):
                problems.append(f"exposure {exposure['name']}: reads {parent}, not a gold model or snapshot")
    assert not problems, _report(problems)


# ---------------------------------------------------------------- 5. fan-out

def test_fanout_is_documented(manifest) -> None:
    """A model with more than FANOUT_THRESHOLD direct children says why in `meta.fanout` (and only then)."""
    problems = []
    for name, node in sorted(_models(manifest).items()):
        children = sorted(c for c in manifest["child_map"].get(node["unique_id"], [])
                          if c.split(".")[0] in ("model", "snapshot", "exposure"))
        reason = str(node["config"].get("meta", {}).get("fanout") or node["meta"].get("fanout") or "").strip()
        if len(children) > FANOUT_THRESHOLD and not reason:
            problems.append(f"{name}: {len(children)} direct children {children} and no meta.fanout saying why")
        if len(children) <= FANOUT_THRESHOLD and reason:
            problems.append(f"{name}: meta.fanout set but only {len(children)} direct children (stale)")
    assert not problems, _report(problems)


# ---------------------------------------------------------------- 6. sources

def _declared_table(source: dict) -> dict:
    spec = yaml.safe_load((PROJECT_DIR / source["original_file_path"]).read_text())
    for declared in spec["sources"]:
        if declared["name"] == source["source_name"]:
            return next(t for t in declared["tables"] if t["name"] == source["name"])
    raise AssertionError(f"{source['unique_id']}: not found in {source['original_file_path']}")


def test_every_source_table_has_freshness_or_says_why_not(manifest) -> None:
    """loaded_at_field + freshness, or an explicit `freshness: null` whose description says why."""
    problems = []
    for source in sorted(manifest["sources"].values(), key=lambda s: s["unique_id"]):
        label = f"{source['source_name']}.{source['name']}"
        if not source["description"].strip() or not source["source_description"].strip():
            problems.append(f"{label}: source or table without a description")
        freshness = source.get("freshness") or {}
        has_bound = any((freshness.get(level) or {}).get("count") for level in ("warn_after", "error_after"))
        if has_bound:
            if not source.get("loaded_at_field") and not source["config"].get("loaded_at_query"):
                problems.append(f"{label}: freshness without loaded_at_field")
            continue
        table = _declared_table(source)
        explicit = "freshness" in (table.get("config") or {}) or "freshness" in table
        if not explicit:
            problems.append(f"{label}: no freshness (set it, or `freshness: null` with the reason)")
        elif "freshness" not in source["description"].lower():
            problems.append(f"{label}: `freshness: null` but the description does not say why")
    assert not problems, _report(problems)
