"""What the hourly job's narrowed build selects, asked of dbt itself (``dbt ls`` on the project).

The oracle is the project's own dependency graph (dbt's manifest) walked in plain Python: the
changed sources' descendants in the step's terms, every test of the unnarrowed lineage, and the
views that must be re-created (a changed definition and its descendants; every view the selection
reads, staging included, when a source's columns changed).
"""

from __future__ import annotations

import json
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
from dbt.cli.main import dbtRunner

from lakehouse.config import PROJECT_DIR
from lakehouse.jobs.changes import Built, BuiltRecord, narrowed_args, schema_fingerprint

TERMS = ["tag:silver", "tag:gold"]
CHANGED = ["ecomm.sale", "crm.user"]


@pytest.fixture(scope="module")
def dbt_ls(tmp_path_factory):
    """``dbt ls`` of the project, parsed once: (args) -> unique ids selected; and the manifest."""
    work = tmp_path_factory.mktemp("narrowing")
    common = ["--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR / "profiles"),
              "--target-path", str(work / "target"), "--log-path", str(work / "logs"), "--quiet"]
    parsed = dbtRunner().invoke(["parse", *common])
    assert parsed.success, parsed.exception
    runner = dbtRunner(manifest=parsed.result)

    def ls(args: list[str]) -> set[str]:
        result = runner.invoke([*args, *common, "--output", "json", "--output-keys", "unique_id"])
        assert result.success, (args, result.exception)
        return {json.loads(line)["unique_id"] for line in result.result}

    manifest = json.loads((work / "target" / "manifest.json").read_text())
    return ls, manifest, work


def _graph(manifest: dict) -> tuple[dict[str, dict], dict[str, list[str]]]:
    nodes = {**manifest["nodes"], **manifest.get("unit_tests", {})}
    return nodes, manifest["child_map"]


def _descendants(children: dict[str, list[str]], roots: set[str]) -> set[str]:
    seen, todo = set(), list(roots)
    while todo:
        node = todo.pop()
        for child in children.get(node, []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def _ancestors(nodes: dict[str, dict], ids: set[str]) -> set[str]:
    seen, todo = set(), list(ids)
    while todo:
        for parent in nodes.get(todo.pop(), {}).get("depends_on", {}).get("nodes", []):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def _selection(manifest: dict, reshaped: list[str], modified: set[str], with_state: bool) -> set[str]:
    """The narrowed build's nodes, from the manifest's graph."""
    nodes, children = _graph(manifest)
    lineage = _descendants(children, {f"source.lakehouse.{s}" for s in CHANGED})
    tagged = {n for n, node in nodes.items() if {"silver", "gold"} & set(node.get("tags", []))}
    # a term selects the tests of what it selects (dbt's eager indirect selection)
    all_terms = tagged | {n for n, node in nodes.items() if n.startswith(("test.", "unit_test."))
                          and tagged & set(node["depends_on"]["nodes"])}
    in_terms = all_terms & lineage
    views = {n for n, node in nodes.items() if node.get("config", {}).get("materialized") == "view"}
    wanted = in_terms - views
    readers = in_terms | _ancestors(nodes, in_terms)
    if not with_state:
        wanted |= views & readers & lineage
    wanted |= views & readers & _descendants(children, {f"source.lakehouse.{s}" for s in reshaped})
    wanted |= views & (all_terms | _ancestors(nodes, all_terms)) & (modified | _descendants(children, modified))
    # and the tests of whatever it builds
    return wanted | {n for n, node in nodes.items() if n.startswith(("test.", "unit_test."))
                     and wanted & set(node["depends_on"]["nodes"])}


def test_unchanged_views_are_left_out_and_their_tests_kept(dbt_ls):
    ls, manifest, work = dbt_ls
    state = work / "state"
    state.mkdir()
    (state / "manifest.json").write_text(json.dumps(manifest))
    selected = ls(["ls", *narrowed_args(["--select", *TERMS], CHANGED, [], state)])
    assert selected == _selection(manifest, [], set(), with_state=True)
    assert not any(manifest["nodes"][n]["config"]["materialized"] == "view" for n in selected if n in manifest["nodes"])
    # every test the unnarrowed lineage runs still runs (views' tests included)
    lineage = [f"{term},source:{source}+" for term in TERMS for source in CHANGED]
    tests = ls(["ls", "--select", *lineage, "--resource-type", "test", "unit_test"])
    assert tests and tests <= selected
    assert any(n.startswith("test.lakehouse.unique_dim_users") for n in tests)


def test_a_changed_view_and_the_views_above_it_are_recreated(dbt_ls):
    ls, manifest, work = dbt_ls
    old = json.loads(json.dumps(manifest))
    old["nodes"]["model.lakehouse.dim_users"]["raw_code"] += "\n-- the last successful run's definition"
    state = work / "old-state"
    state.mkdir()
    (state / "manifest.json").write_text(json.dumps(old))
    selected = ls(["ls", *narrowed_args(["--select", *TERMS], CHANGED, [], state)])
    assert selected == _selection(manifest, [], {"model.lakehouse.dim_users"}, with_state=True)
    assert {"model.lakehouse.dim_users", "model.lakehouse.rpt_top_buyers"} <= selected


def test_changed_columns_recreate_every_view_the_selection_reads(dbt_ls):
    ls, manifest, work = dbt_ls
    state = work / "state-reshaped"
    state.mkdir()
    (state / "manifest.json").write_text(json.dumps(manifest))
    selected = ls(["ls", *narrowed_args(["--select", *TERMS], CHANGED, ["crm.user"], state)])
    assert selected == _selection(manifest, ["crm.user"], set(), with_state=True)
    assert {"model.lakehouse.stg_crm__users", "model.lakehouse.users", "model.lakehouse.dim_users"} <= selected
    # with no manifest saved yet, every view of the lineage
    selected = ls(["ls", *narrowed_args(["--select", *TERMS], CHANGED)])
    assert selected == _selection(manifest, [], set(), with_state=False)
    assert "model.lakehouse.stg_ecomm__sales" in selected


def test_every_materialization_is_a_view_or_kept_by_a_narrowed_step(dbt_ls):
    """A model built some other way would silently drop out of the hourly job: KEPT_KINDS must name it."""
    _, manifest, _ = dbt_ls
    kinds = {node["config"]["materialized"] for node in manifest["nodes"].values()
             if node["resource_type"] in ("model", "snapshot")}
    assert kinds <= {"view", "incremental", "table", "snapshot", "ephemeral"}, kinds


def test_a_manifest_of_another_dbt_version_is_not_compared(tmp_path):
    record = BuiltRecord(tmp_path, 1, "lake")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"metadata": {"dbt_version": "1.0.0"}}))
    record.save(Built({"sale": "1"}, {"sale": None}), manifest)
    assert record.load() == Built({"sale": "1"}, {"sale": None}) and record.state() is None
    manifest.write_text(json.dumps({"metadata": {"dbt_version": version("dbt-core")}}))
    record.save(Built({"sale": "2"}), manifest)
    assert record.state() == tmp_path / "built" / "step-1"


def test_the_schema_fingerprint_follows_the_columns_of_the_newest_commit(tmp_path):
    """Read from a Java-written table's commit metadata; an added column changes it, a renamed
    Avro record (another writer's naming) does not."""
    fixture = Path(__file__).parents[1] / "fixtures/hudi-tables/v6_nonpartitioned.zip"
    zipfile.ZipFile(fixture).extractall(tmp_path)
    table = tmp_path / "v6_nonpartitioned"
    written = schema_fingerprint(str(table))
    assert written is not None
    newest = max((p for p in (table / ".hoodie").iterdir() if p.suffix in (".commit", ".deltacommit")),
                 key=lambda p: p.name)
    metadata = json.loads(newest.read_text())
    schema = json.loads(metadata["extraMetadata"]["schema"])
    metadata["extraMetadata"]["schema"] = json.dumps(dict(schema, name="other_record", namespace="other"))
    newest.write_text(json.dumps(metadata))
    assert schema_fingerprint(str(table)) == written
    schema["fields"].append({"name": "vip", "type": ["null", "boolean"], "default": None})
    metadata["extraMetadata"]["schema"] = json.dumps(schema)
    newest.write_text(json.dumps(metadata))
    assert schema_fingerprint(str(table)) not in (None, written)
