"""dead-letter list/replay on a lake built without Spark (the same parse + commit code, driven in-process).

Judges: the simulator's oracle (which lines are bad and why), hudi-rs reads (what the
tables hold after a replay) and the project's cdc parser applied to the corrected line.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from ingestion.cdc.parser import BronzeEvent, parse_line
from ingestion.stream.bronze import bronze_config, bronze_contracts, dead_letter_config, table_path
from ingestion.stream.commit import StreamMarker, write_once
from ingestion.stream.dead_letters import list_dead_letters, replay
from ingestion.stream.parse import LineParser
from lakehouse.cli import main as cli_main
from simulator.oracle import load_oracle
from tests.stream.conftest import simulate
from tests.stream.judge import dead_letter_tuples_bronze, dead_letter_tuples_oracle, hudi_rows

NOW = dt.datetime(2026, 2, 1)


def build_lake_in_process(landing: Path, lake: Path) -> None:
    """Parse every landed line with the stream's LineParser and commit like one micro-batch."""
    files, indexes, raws = [], [], []
    for path in sorted((landing / "topics").rglob("*.json")):
        relative = str(path.relative_to(landing))
        lines = path.read_bytes().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        files += [relative] * len(lines)
        indexes += range(len(lines))
        raws += lines
    parser = LineParser(NOW)
    events, dead, _ = parser.parse(files, indexes, raws)
    marker = StreamMarker("test", 0, "test")
    for table, table_events in events.items():
        write_once(table_path(lake, table), bronze_config(bronze_contracts()[table]),
                   parser.event_table(table, table_events), marker)
    write_once(table_path(lake, "dead_letter"), dead_letter_config(), parser.dead_table(dead), marker)


@pytest.fixture()
def lake_with_dead_letters(tmp_path: Path) -> tuple[Path, Path]:
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    simulate(landing, fmt="envelope", changes=200, inject_bad=12)
    build_lake_in_process(landing, lake)
    return landing, lake


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

    for _ in range(2):  # a second replay of the same fix changes nothing
        code = cli_main(["dead-letter", "replay", "--lake", str(lake), "--fixes", str(fixes)])
        assert code == 0
    rows = hudi_rows(table_path(lake, table))
    assert len(rows) == before + 1
    matches = [r for r in rows if all(r[k] == expected.row[k] for k in key_columns)]
    assert len(matches) == 1
    assert matches[0]["_cdc_op"] == "c"
    remaining = {r["dead_letter_id"] for r in hudi_rows(table_path(lake, "dead_letter"))}
    assert bad["dead_letter_id"] not in remaining
    assert len(remaining) == len(load_oracle(str(landing)).dead_letters()) - 1
    assert "replayed 1 events" in capsys.readouterr().out


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
