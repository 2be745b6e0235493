"""The table contracts are the single source of truth: the dbt sources must declare every contract column."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ingestion.cdc.contracts import BRONZE_METADATA_COLUMNS, load_contracts, topic_map

PROJECT = Path(__file__).resolve().parents[2]
SOURCE_FILES = sorted((PROJECT / "models").glob("**/_*__sources.yml"))


def _dbt_source_tables() -> dict[tuple[str, str], dict]:
    tables = {}
    for path in SOURCE_FILES:
        document = yaml.safe_load(path.read_text()) or {}
        for source in document.get("sources") or []:
            for table in source.get("tables") or []:
                tables[(source["name"], table["name"])] = {"file": path, **table}
    return tables


def test_every_contract_table_is_unique_and_typed():
    contracts = load_contracts()
    assert sorted(contracts) == ["category", "date", "event", "listing", "sale", "user", "venue"]
    assert {c.connector for c in contracts.values()} == {"mysql", "postgres", "sqlserver"}
    assert len(topic_map()) == sum(len(c.topics) for c in contracts.values())


@pytest.mark.skipif(not SOURCE_FILES, reason="no dbt sources in this checkout yet")
@pytest.mark.parametrize("table", sorted(load_contracts()))
def test_dbt_sources_declare_every_contract_column_with_its_type(table):
    contract = load_contracts()[table]
    sources = _dbt_source_tables()
    declared = sources.get((contract.system, table))
    assert declared is not None, f"dbt source {contract.system}.{table} is missing (files: {SOURCE_FILES})"
    columns = {c["name"]: c for c in declared.get("columns") or []}
    expected = [(c.name, c.type) for c in contract.columns] + list(BRONZE_METADATA_COLUMNS)
    missing = [name for name, _ in expected if name not in columns]
    assert not missing, f"{declared['file'].name}: {contract.system}.{table} lacks contract columns {missing}"
    wrong = [
        (name, kind, columns[name].get("data_type"))
        for name, kind in expected
        if columns[name].get("data_type") not in (None, kind)
    ]
    assert not wrong, f"{declared['file'].name}: {contract.system}.{table} column types differ: {wrong}"
