"""Landed files read out of offset order: bronze keeps the lowest-offset copy of each event, and
offsets reused for other events stop the stream with a clear error.

Judges: hudi-rs reads of bronze (which file and offset each event's row came from) against
the landed files themselves, and the simulator's oracle for "every event once".
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ingestion.stream.job import IngestError
from ingestion.stream.late_copies import HighWater, stored_high_water
from tests.stream.conftest import ingest, simulate
from tests.stream.judge import compare_events, hudi_rows

TOPIC = "tickit.ecomm.sale"


def _land(content: bytes, landing: Path, partition: int, offset: int, folder: str | None = None) -> Path:
    """``content`` landed as the S3 sink names a file of ``partition`` starting at ``offset``."""
    name = f"{TOPIC}+{partition}+{offset:010d}.json"
    target = landing / "topics" / TOPIC / (folder or f"partition={partition}") / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    return target


def _start_offset(path: Path) -> int:
    return int(path.stem.rpartition("+")[2])


def _events(content: bytes) -> int:
    return sum(1 for line in content.splitlines() if line.strip() and line.strip() != b"null" and json.loads(line))


def _by_file(lake: Path) -> Counter:
    return Counter(r["_cdc_landing_file"] for r in hudi_rows(lake / "bronze" / "sale"))


def _assert_every_event_once(tmp_path: Path) -> None:
    report = compare_events(tmp_path / "lake", tmp_path / "landing")
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report
    assert report["sale"][0] == report["sale"][1], report["sale"]


def test_a_file_landed_late_replaces_the_higher_offset_copies_of_its_events(tmp_path, spark) -> None:
    landing = tmp_path / "landing"
    simulate(landing, fmt="flattened", scale=0.003, changes=300, inject_bad=0, restarts=0)
    files = sorted((landing / "topics" / TOPIC / "partition=1").glob("*.json"))
    assert files, "the simulator landed no sale file in partition 1"
    original = files[0]
    content = original.read_bytes()
    copied = _events(content)
    assert copied > 0
    # the file is missing at first; a re-delivery of its events (after a Connect crash) lands at
    # a higher offset of the same partition and is ingested
    original.unlink()
    redelivered = _land(content, landing, partition=1, offset=900_000)
    ingest(spark, tmp_path, "bronze_late")
    lake = tmp_path / "lake"
    rel = lambda path: str(path.relative_to(landing))  # noqa: E731
    assert _by_file(lake)[rel(redelivered)] == copied
    # the table's offset marks, recomputed from its rows, are the maxima hudi-rs reads
    rows = hudi_rows(lake / "bronze" / "sale")
    highest: dict[tuple[str, int], int] = {}
    for row in rows:
        key = (row["_cdc_topic"], row["_cdc_kafka_partition"])
        highest[key] = max(highest.get(key, -1), row["_cdc_kafka_offset"])
    assert stored_high_water(spark, str(lake / "bronze" / "sale")) == HighWater(highest)
    assert highest[(TOPIC, 1)] >= 900_000

    # then the original file lands (later by modification time): its copies are the first ones
    original.write_bytes(content)
    second = ingest(spark, tmp_path, "bronze_late")
    assert sum(r.files for r in second.summary.reports) == 1
    assert sum(r.late_rows.get("sale", 0) for r in second.summary.reports) == copied
    assert sum(r.replaced_copies.get("sale", 0) for r in second.summary.reports) == copied
    by_file = _by_file(lake)
    assert by_file[rel(original)] == copied
    assert by_file[rel(redelivered)] == 0
    start = _start_offset(original)
    offsets = [r["_cdc_kafka_offset"] for r in hudi_rows(lake / "bronze" / "sale")
               if r["_cdc_landing_file"] == rel(original)]
    assert min(offsets) >= start and max(offsets) < start + len(content.splitlines())
    _assert_every_event_once(tmp_path)

    # a third copy at an offset between the two: at or below the mark, but higher than the stored copy
    middle = _land(content, landing, partition=1, offset=800_000)
    third = ingest(spark, tmp_path, "bronze_late")
    assert sum(r.late_rows.get("sale", 0) for r in third.summary.reports) == copied
    assert sum(r.replaced_copies.get("sale", 0) for r in third.summary.reports) == 0
    assert _by_file(lake)[rel(middle)] == 0
    assert _by_file(lake)[rel(original)] == copied
    _assert_every_event_once(tmp_path)


def test_offsets_reused_for_other_events_stop_the_stream_and_change_nothing(tmp_path, spark) -> None:
    landing = tmp_path / "landing"
    simulate(landing, fmt="flattened", scale=0.003, changes=300, inject_bad=0, restarts=0)
    ingest(spark, tmp_path, "bronze_reused")
    lake = tmp_path / "lake"
    before = Counter(tuple(sorted(r.items())) for r in hudi_rows(lake / "bronze" / "sale"))
    taken = sorted((landing / "topics" / TOPIC / "partition=1").glob("*.json"))[0]
    other = sorted((landing / "topics" / TOPIC / "partition=0").glob("*.json"))[0]
    # a recreated topic's first file, landed under another prefix: partition 1's offsets again,
    # holding other events
    _land(other.read_bytes(), landing, partition=1, offset=_start_offset(taken), folder="year=2026/month=01/day=09")
    with pytest.raises(IngestError) as failure:
        ingest(spark, tmp_path, "bronze_reused")
    message = str(failure.value)
    assert "ReusedOffsetsError" in message and "bronze.sale" in message, message
    assert f"of {TOPIC} partition 1" in message and "Reused Kafka offsets" in message, message
    after = Counter(tuple(sorted(r.items())) for r in hudi_rows(lake / "bronze" / "sale"))
    assert after == before


def test_keys_arriving_in_a_new_partition_of_the_topic_are_reported(tmp_path, spark, caplog) -> None:
    landing = tmp_path / "landing"
    simulate(landing, fmt="flattened", scale=0.003, changes=300, inject_bad=0, restarts=0)
    first = ingest(spark, tmp_path, "bronze_moved")
    assert all(not r.moved_keys for r in first.summary.reports)  # a table's first partitions move nothing
    lake = tmp_path / "lake"
    stored = {row["salesid"] for row in hudi_rows(lake / "bronze" / "sale") if row["_cdc_op"] != "t"}
    # the topic gained a partition: changes of keys stored from its first partitions now arrive
    # in a new one, beside a key never seen before
    source = sorted((landing / "topics" / TOPIC / "partition=0").glob("*.json"))[0]
    lines = [json.loads(line) for line in source.read_bytes().splitlines() if line.strip() not in (b"", b"null")]
    changes = [line for line in lines if line.get("__op") != "t" and line.get("salesid") is not None][:5]
    assert changes, f"no row change in {source.name}"
    fresh = {**changes[0], "salesid": 10**9}
    moved = {line["salesid"] for line in changes} & stored
    assert moved and fresh["salesid"] not in stored
    new = 1 + max(int(folder.name.partition("=")[2]) for folder in (landing / "topics" / TOPIC).iterdir())
    _land(b"".join(json.dumps(line).encode() + b"\n" for line in [*changes, fresh]), landing, partition=new, offset=0)
    with caplog.at_level("WARNING", logger="lakehouse.ingest"):
        second = ingest(spark, tmp_path, "bronze_moved")
    reported = [r.moved_keys for r in second.summary.reports if r.moved_keys]
    assert reported == [{"sale": {f"{TOPIC}[{new}]": len(moved)}}]
    warnings = [r.getMessage() for r in caplog.records if "now arrive in" in r.getMessage()]
    assert len(warnings) == 1 and f"{TOPIC}[{new}] ({len(moved)} keys)" in warnings[0], warnings
    assert "assert_one_kafka_partition_per_key" in warnings[0]
    # bronze still takes the partition's events: the new key is stored, from the new partition
    rows = [r for r in hudi_rows(lake / "bronze" / "sale") if r["salesid"] == fresh["salesid"]]
    assert [(r["_cdc_topic"], r["_cdc_kafka_partition"]) for r in rows] == [(TOPIC, new)]
