"""Static checks of the dbt project against the CDC table contracts and the house style.

No warehouse needed: these read the YAML and SQL files directly and compare them with
ingestion.cdc.contracts (the single source of truth of the bronze columns). The house rules
dbt itself resolves (descriptions, tested keys, who reads sources) are checked once, on the
manifest, in test_dbt_rules.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ingestion.cdc.contracts import BRONZE_METADATA_COLUMNS, load_contracts
from tests.dbt_project.dbt_runner import PROJECT_DIR
from tests.dbt_project.silver_oracle import silver_columns

MODELS = PROJECT_DIR / "models"
HOODIE_COLUMNS = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                  "_hoodie_partition_path", "_hoodie_file_name"]


def _yaml_files(pattern: str) -> list[Path]:
    return sorted(MODELS.glob(pattern))


def _sources() -> dict[str, dict]:
    """Source tables by table name, each with its source (system) name."""
    tables = {}
    for path in _yaml_files("staging/*/_*__sources.yml"):
        for source in yaml.safe_load(path.read_text())["sources"]:
            for table in source["tables"]:
                tables[table["name"]] = {**table, "source": source["name"], "source_spec": source}
    return tables


@pytest.mark.parametrize("table", sorted(load_contracts()))
def test_source_columns_equal_the_contract_bronze_columns(table: str) -> None:
    contract = load_contracts()[table]
    source = _sources().get(table)
    assert source is not None, f"no dbt source for contract table {table!r}"
    assert source["source"] == contract.system, f"{table}: source {source['source']} != system {contract.system}"
    declared = [(c["name"], c.get("data_type")) for c in source["columns"]]
    expected = list(contract.bronze_columns) + [(name, "string") for name in HOODIE_COLUMNS]
    assert declared == expected


@pytest.mark.parametrize("table", sorted(load_contracts()))
def test_every_source_column_is_described_and_freshness_is_set(table: str) -> None:
    source = _sources()[table]
    undocumented = [c["name"] for c in source["columns"] if not str(c.get("description", "")).strip()]
    assert not undocumented, f"{table}: columns without description: {undocumented}"
    config = source["source_spec"].get("config", {})
    assert config.get("loaded_at_field") == "_cdc_ingested_at"
    assert config.get("freshness", {}).get("error_after"), f"{table}: no freshness error_after"


@pytest.mark.parametrize("table", ["dead_letter", "schema_change"])
def test_ingestion_sources_match_the_ingestion_tables(table: str) -> None:
    from ingestion.stream.bronze import INGESTION_TABLES

    source = _sources()[table]
    assert source["source"] == "ingestion"
    declared = [(c["name"], c.get("data_type")) for c in source["columns"]]
    assert declared == [*INGESTION_TABLES[table][1], ("_hoodie_commit_time", "string")]
    assert all(str(c.get("description", "")).strip() for c in source["columns"])


def test_bronze_metadata_columns_reach_staging() -> None:
    """Every staging model renames all `_cdc_*` columns through one macro (no drift per model), given
    its own source so the columns that source added follow them."""
    for table, contract in load_contracts().items():
        relation = silver_columns(table)[0]
        sql = (MODELS / "staging" / contract.system / f"stg_{contract.system}__{relation}.sql").read_text()
        call = f"{{{{ cdc_metadata_columns('{contract.system}', '{table}') }}}}"
        assert call in sql, f"{table}: staging does not use {call}"
        assert f"source('{contract.system}', '{table}')" in sql
    macro = (PROJECT_DIR / "macros" / "cdc" / "cdc_metadata_columns.sql").read_text()
    missing = [name for name, _ in BRONZE_METADATA_COLUMNS if name not in macro]
    assert not missing, f"cdc_metadata_columns() drops {missing}"


@pytest.mark.parametrize("table", sorted(load_contracts()))
def test_staging_renames_every_contract_column_as_silver_expects(table: str) -> None:
    contract = load_contracts()[table]
    relation, columns = silver_columns(table)
    sql = (MODELS / "staging" / contract.system / f"stg_{contract.system}__{relation}.sql").read_text()
    for source_name, silver_name in columns.items():
        expected = source_name if source_name == silver_name else f"{source_name} as {silver_name}"
        assert f"{expected}," in sql, f"stg model of {table}: expected `{expected}`"
    assert set(columns) == set(contract.column_names)


def test_hoodie_columns_stop_at_staging() -> None:
    for path in MODELS.rglob("*.sql"):
        if "staging" in path.parts:
            continue
        assert "_hoodie_" not in path.read_text(), f"{path} uses a _hoodie_ column"


def test_silver_has_one_relation_per_entity() -> None:
    silver = {p.stem for p in (MODELS / "silver").glob("*.sql")}
    assert silver == {silver_columns(table)[0] for table in load_contracts()}


def test_dead_letter_reasons_accepted_by_the_source_are_the_parsers_reason_codes() -> None:
    """A reason the ingestion writes must not fail the source's accepted_values test, nor may the test
    accept a reason the ingestion never writes."""
    from ingestion.cdc.parser import REASON_CODES

    reason = next(column for column in _sources()["dead_letter"]["columns"] if column["name"] == "reason")
    (accepted,) = [test["accepted_values"]["arguments"]["values"] for test in reason["data_tests"]
                   if isinstance(test, dict) and "accepted_values" in test]
    assert sorted(accepted) == sorted(REASON_CODES)
