"""dead-letter list/replay on a lake the ingestion built (``run_ingest --once``, no catalog).

Judges: the simulator's oracle (which lines are bad and why), hudi-rs reads (what the
tables hold after a replay) and the project's cdc parser applied to the corrected line.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from ingestion.cdc.parser import BronzeEvent, parse_line
from ingestion.stream import IngestOptions, run_ingest
from ingestion.stream.bronze import bronze_contracts, table_path
from ingestion.stream.dead_letters import list_dead_letters, replay
from lakehouse.cli import main as cli_main
from simulator.oracle import load_oracle
from tests.stream.conftest import cut_first_commit_short, simulate
from tests.stream.judge import dead_letter_tuples_bronze, dead_letter_tuples_oracle, hudi_commits, hudi_rows

NOW = dt.datetime(2026, 2, 1)


def build_lake(spark, landing: Path, lake: Path) -> None:
    """Ingest every landed file into ``lake`` (``--once``, no catalog sync)."""
    options = IngestOptions(landing=str(landing), lake=str(lake), checkpoints_root=lake.parent / "checkpoints",
                            once=True, sync=False)
    run_ingest(options, spark=spark, log_stream=None)


@pytest.fixture(scope="module")
def built_lake(tmp_path_factory, spark) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("dead-letters")
    landing, lake = base / "landing", base / "lake"
    simulate(landing, fmt="envelope", changes=200, inject_bad=12)
    build_lake(spark, landing, lake)
    return landing, lake


@pytest.fixture()
def lake_with_dead_letters(built_lake, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the built lake of its own for each test (replays change it)."""
    landing, lake = built_lake
    shutil.copytree(lake, tmp_path / "lake")
    return landing, tmp_path / "lake"


def test_list_matches_the_oracle(lake_with_dead_letters) -> None:
    landing, lake = lake_with_dead_letters
    assert dead_letter_tuples_bronze(lake) == dead_letter_tuples_oracle(landing)
    oracle = load_oracle(str(landing)).dead_letters()
    some_reason = oracle[0]["reason"]
    listed = list_dead_letters(str(lake), reason=some_reason)
    assert len(listed) == sum(1 for d in oracle if d["reason"] == some_reason)
    assert len(list_dead_letters(str(lake), limit=3)) == 3


def test_replay_of_a_corrected_line_moves_it_into_bronze_once(lake_with_dead_letters, tmp_path, capsys) -> None:
    landing, lake = lake_with_dead_letters
    bad = next(d for d in list_dead_letters(str(lake), reason="unknown_op"))
    document = json.loads(bad["raw_line"])
    envelope = document.get("payload", document)
    envelope["op"] = "c"  # the operator's fix: an upper-case op code
    fixed_line = json.dumps(document)
    fixes = tmp_path / "fixes.jsonl"
    fixes.write_text(json.dumps({"dead_letter_id": bad["dead_letter_id"], "raw_line": fixed_line}) + "\n")
    expected = parse_line(fixed_line.encode(), topic=bad["topic"], partition=bad["kafka_partition"],
                          offset=bad["kafka_offset"], landing_file=bad["landing_file"], ingested_at=NOW)
    assert isinstance(expected, BronzeEvent)
    table = expected.table
    key_columns = [*bronze_contracts()[table].primary_key, "_cdc_position"]
    before = len(hudi_rows(table_path(lake, table)))
    dead_before = {r["dead_letter_id"]: r for r in hudi_rows(table_path(lake, "dead_letter"))}

    code = cli_main(["dead-letter", "replay", "--lake", str(lake), "--fixes", str(fixes)])
    assert code == 0
    assert "replayed 1 events" in capsys.readouterr().out
    commits = {t: hudi_commits(table_path(lake, t)) for t in (table, "dead_letter")}
    # a second replay of the same fix changes nothing (the dead letter is gone: no commit at all)
    assert cli_main(["dead-letter", "replay", "--lake", str(lake), "--fixes", str(fixes)]) == 0
    assert {t: hudi_commits(table_path(lake, t)) for t in commits} == commits
    rows = hudi_rows(table_path(lake, table))
    assert len(rows) == before + 1
    matches = [r for r in rows if all(r[k] == expected.row[k] for k in key_columns)]
    assert len(matches) == 1
    assert matches[0]["_cdc_op"] == "c"
    # independent of the parser: where the line came from, by the simulator's oracle, and the
    # corrected document's own `after` values of the entity's integer and string columns
    origin = next(d for d in load_oracle(str(landing)).dead_letters() if d["raw_line"] == bad["raw_line"])
    stored = matches[0]
    assert (stored["_cdc_topic"], stored["_cdc_kafka_partition"], stored["_cdc_kafka_offset"],
            stored["_cdc_landing_file"]) == (origin["topic"], origin["partition"], origin["offset"], origin["file"])
    contract = bronze_contracts()[table]
    plain = {c.name for c in contract.columns if c.type in ("int", "string")}
    after = {k: v for k, v in envelope["after"].items() if k in plain and v is not None}
    assert after and set(contract.primary_key) <= set(after)
    assert {k: stored[k] for k in after} == after
    # every value as the parser gives it (timestamps included), but the ingestion time
    assert {k: matches[0][k] for k in expected.row if k != "_cdc_ingested_at"} == {
        k: v for k, v in expected.row.items() if k != "_cdc_ingested_at"}
    remaining = {r["dead_letter_id"]: r for r in hudi_rows(table_path(lake, "dead_letter"))}
    assert set(remaining) == set(dead_before) - {bad["dead_letter_id"]}
    assert len(remaining) == len(load_oracle(str(landing)).dead_letters()) - 1
    def data(row: dict) -> dict:
        return {k: v for k, v in row.items() if not k.startswith("_hoodie")}

    assert all(data(remaining[k]) == data(dead_before[k]) for k in remaining)  # the others untouched


def test_replay_without_fix_keeps_lines_that_still_fail(lake_with_dead_letters) -> None:
    _, lake = lake_with_dead_letters
    rows = list_dead_letters(str(lake), reason="malformed_json")
    result = replay(str(lake), rows)
    assert result.replayed == {} and len(result.still_bad) == len(rows)
    assert {b["reason"] for b in result.still_bad} == {"malformed_json"}
    assert len(list_dead_letters(str(lake), reason="malformed_json")) == len(rows)


def test_replay_needs_a_selection(lake_with_dead_letters, capsys) -> None:
    _, lake = lake_with_dead_letters
    assert cli_main(["dead-letter", "replay", "--lake", str(lake)]) == 2
    assert "needs a selection" in capsys.readouterr().err


def test_replay_replaces_a_stored_higher_offset_copy_of_the_event(built_lake, tmp_path, capsys, spark) -> None:
    """The corrected line sits at its original offset; a re-delivered copy of the same event, landed
    later at a higher offset of the same partition, is already in bronze: the replayed copy, the
    first occurrence, replaces it."""
    landing_source, lake_source = built_lake
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    shutil.copytree(landing_source, landing)
    shutil.copytree(lake_source, lake)
    bad = next(d for d in list_dead_letters(str(lake), reason="unknown_op"))
    document = json.loads(bad["raw_line"])
    document.get("payload", document)["op"] = "c"
    fixed_line = json.dumps(document)
    topic, partition = bad["topic"], bad["kafka_partition"]
    redelivery = landing / "topics" / topic / f"partition={partition}" / f"{topic}+{partition}+0000900000.json"
    redelivery.write_text(fixed_line + "\n")
    # a new checkpoint: every landed file again (all at or below the stored offsets: dropped), and the copy
    run_ingest(IngestOptions(landing=str(landing), lake=str(lake), checkpoints_root=tmp_path / "checkpoints",
                             once=True, sync=False), spark=spark, log_stream=None)
    expected = parse_line(fixed_line.encode(), topic=topic, partition=partition, offset=bad["kafka_offset"],
                          landing_file=bad["landing_file"], ingested_at=NOW)
    assert isinstance(expected, BronzeEvent)
    table = expected.table
    keys = [*bronze_contracts()[table].primary_key, "_cdc_position"]

    def copies() -> list[dict]:
        return [r for r in hudi_rows(table_path(lake, table)) if all(r[k] == expected.row[k] for k in keys)]

    stored = copies()
    assert [(r["_cdc_kafka_offset"], r["_cdc_landing_file"]) for r in stored] == [
        (900_000, str(redelivery.relative_to(landing)))]
    rows_before = len(hudi_rows(table_path(lake, table)))
    assert len(hudi_rows(table_path(lake_source, table))) == rows_before - 1  # the re-ingestion added only the copy

    fixes = tmp_path / "fixes.jsonl"
    fixes.write_text(json.dumps({"dead_letter_id": bad["dead_letter_id"], "raw_line": fixed_line}) + "\n")
    assert cli_main(["dead-letter", "replay", "--lake", str(lake), "--fixes", str(fixes)]) == 0
    assert "replayed 1 events" in capsys.readouterr().out
    assert [(r["_cdc_kafka_offset"], r["_cdc_landing_file"]) for r in copies()] == [
        (bad["kafka_offset"], bad["landing_file"])]
    assert len(hudi_rows(table_path(lake, table))) == rows_before


def test_replay_into_a_table_whose_first_commit_was_cut_short(lake_with_dead_letters, tmp_path, spark) -> None:
    """A replay can meet a table a kill left with ``hoodie.properties`` and no completed commit:
    it holds no row to resolve late copies against, and the replay's commit finishes it."""
    _, lake = lake_with_dead_letters
    bad = next(d for d in list_dead_letters(str(lake), reason="unknown_op"))
    document = json.loads(bad["raw_line"])
    document.get("payload", document)["op"] = "c"
    fixed_line = json.dumps(document)
    expected = parse_line(fixed_line.encode(), topic=bad["topic"], partition=bad["kafka_partition"],
                          offset=bad["kafka_offset"], landing_file=bad["landing_file"], ingested_at=NOW)
    assert isinstance(expected, BronzeEvent)
    shutil.rmtree(table_path(lake, expected.table))
    cut_first_commit_short(spark, lake, expected.table)
    fixes = tmp_path / "fixes.jsonl"
    fixes.write_text(json.dumps({"dead_letter_id": bad["dead_letter_id"], "raw_line": fixed_line}) + "\n")

    assert cli_main(["dead-letter", "replay", "--lake", str(lake), "--fixes", str(fixes)]) == 0

    [row] = hudi_rows(table_path(lake, expected.table))
    assert {k: row[k] for k in expected.row if k != "_cdc_ingested_at"} == {
        k: v for k, v in expected.row.items() if k != "_cdc_ingested_at"}
    assert len(hudi_commits(table_path(lake, expected.table))) == 1
