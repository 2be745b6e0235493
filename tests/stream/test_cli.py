"""CLI usage errors name the input; status and sync on a lake the ingestion built (read without a JVM)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from lakehouse.cli import main as cli_main
from simulator.oracle import load_oracle
from tests.stream.judge import hudi_rows
from tests.stream.test_dead_letter_replay import build_lake, simulate


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory, spark) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("cli-lake")
    landing, lake = base / "landing", base / "lake"
    simulate(landing, fmt="mixed", changes=150, inject_bad=9)
    build_lake(spark, landing, lake)
    return landing, lake


def test_ingest_names_a_landing_zone_without_topics(tmp_path, capsys) -> None:
    code = cli_main(["ingest", "--once", "--landing", str(tmp_path / "nowhere"), "--lake", str(tmp_path / "l")])
    assert code == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "nowhere") in err and "topics/" in err


def test_ingest_rejects_a_non_positive_limit(tmp_path, capsys) -> None:
    (tmp_path / "topics").mkdir()
    code = cli_main(["ingest", "--once", "--landing", str(tmp_path), "--lake", str(tmp_path / "lake"),
                     "--max-files-per-trigger", "0"])
    assert code == 2
    assert "positive" in capsys.readouterr().err


def test_status_counts_rows_and_dead_letters(small_lake, capsys, monkeypatch, tmp_path) -> None:
    landing, lake = small_lake
    monkeypatch.setenv("LAKEHOUSE_HOME", str(tmp_path / "home"))
    assert cli_main(["status", "--json", "--no-catalog", "--lake", str(lake), "--landing", str(landing)]) == 0
    status = json.loads(capsys.readouterr().out)
    by_table = {t["table"]: t for t in status["tables"]}
    oracle = load_oracle(str(landing))
    for table in oracle.tables:
        assert by_table[table]["rows"] == len(hudi_rows(lake / "bronze" / table)), table
        assert by_table[table]["last_commit"] is not None
    expected_reasons = Counter(d["reason"] for d in oracle.dead_letters())
    assert by_table["dead_letter"]["dead_letters_by_reason"] == dict(expected_reasons)
    assert status["landed_files"] == len(list((landing / "topics").rglob("*.json")))


def test_status_reports_schema_drift(tmp_path, capsys, monkeypatch, spark) -> None:
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    folder = landing / "topics" / "tickit.ems.category" / "partition=0"
    folder.mkdir(parents=True)
    line = {"catid": 1, "catgroup": "Sports", "catname": "MLB", "catdesc": "Baseball", "catcolor": "blue",
            "__op": "c", "__deleted": "false", "__source_ts_ms": 1700000000000, "__lsn": 10, "__txId": 5}
    (folder / "tickit.ems.category+0+0000000000.json").write_text(json.dumps(line) + "\n")
    build_lake(spark, landing, lake)
    monkeypatch.setenv("LAKEHOUSE_HOME", str(tmp_path / "home"))
    assert cli_main(["status", "--json", "--no-catalog", "--lake", str(lake), "--landing", str(landing)]) == 0
    tables = {t["table"]: t for t in json.loads(capsys.readouterr().out)["tables"]}
    assert tables["category"]["drift_columns"] == ["catcolor"]
    assert [r["catcolor"] for r in hudi_rows(lake / "bronze" / "category")] == ["blue"]


def test_sync_names_an_unknown_table(small_lake, capsys) -> None:
    _, lake = small_lake
    assert cli_main(["sync", "--lake", str(lake), "nosuchtable"]) == 2
    err = capsys.readouterr().err
    assert "nosuchtable" in err and "sale" in err
