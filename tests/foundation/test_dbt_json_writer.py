"""ingestion/dbt_json_writer.py: the same artifact text as dbt-common's writer, in place of it."""

from __future__ import annotations

import datetime
import decimal
import sys
from pathlib import Path

import pytest

from ingestion import dbt_json_writer

DOCUMENT = {
    "metadata": {"generated_at": datetime.datetime(2026, 11, 23, 14, 30, 1, 123456), "dbt_version": "1.11.16"},
    "nodes": {
        "model.tickit_lakehouse.sales": {
            "description": "Ventes \u00e0 \u20ac, quotes \" and \\ backslashes,\nnew lines, \u2028, \U0001f39f",
            "columns": {"price": {"data_type": "decimal(8,2)", "meta": {"min": decimal.Decimal("0.01")}}},
            "tags": ["silver", "cdc_state"],
            "config": {"enabled": True, "threads": None, "ratio": 0.1, "big": 1e20, "neg": -0.0, "n": 10**20},
            "empty": {}, "nothing": [],
        },
    },
    "dates": [datetime.date(2026, 1, 1)],
}


def loaded_bindings() -> list[tuple[object, str]]:
    """Every loaded dbt module that holds a `write_json` (the bindings install() may replace)."""
    return [(module, "write_json") for name, module in list(sys.modules.items())
            if name.startswith(("dbt.", "dbt_common.")) and hasattr(module, "write_json")]


def test_it_writes_the_same_bytes_as_dbt_commons_writer(tmp_path: Path) -> None:
    from dbt_common.clients import system

    assert system.write_json is not dbt_json_writer.write_json  # not installed in pytest's process
    assert system.write_json(str(tmp_path / "dbt" / "a.json"), DOCUMENT) is True
    assert dbt_json_writer.write_json(str(tmp_path / "ours" / "a.json"), DOCUMENT) is True
    theirs = (tmp_path / "dbt" / "a.json").read_bytes()
    assert (tmp_path / "ours" / "a.json").read_bytes() == theirs
    assert b"2026-11-23T14:30:01.123456" in theirs  # dbt's encoder really handled the datetime


def test_install_replaces_dbt_commons_writer_wherever_dbt_imported_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import dbt.artifacts.schemas.base as base
    from dbt_common.clients import system

    original = system.write_json
    for module, attribute in loaded_bindings():  # restored after the test
        monkeypatch.setattr(module, attribute, getattr(module, attribute))
    assert base.write_json is original

    assert dbt_json_writer.install() is True
    assert system.write_json is dbt_json_writer.write_json
    assert base.write_json is dbt_json_writer.write_json
    assert all(getattr(module, attribute) is not original for module, attribute in loaded_bindings())
    assert dbt_json_writer.install() is True  # a second call changes nothing


def test_install_leaves_a_writer_it_does_not_know_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from dbt_common.clients import system

    def write_json(path: str, data: dict, indent: int | None = None) -> bool:  # a future dbt-common's
        return True

    monkeypatch.setattr(system, "write_json", write_json)
    assert dbt_json_writer.install() is False
    assert system.write_json is write_json
