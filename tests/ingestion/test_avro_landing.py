"""Avro landing files (the S3 sink's AvroFormat) end to end: simulator -> ingest --once -> Hudi bronze.

One seed is landed twice, as JSON lines (DefaultPartitioner) and as Avro container files
(DailyPartitioner, the reference pipeline's layout), both with mixed shapes, a truncate
and injected bad events. Judges: the simulator's oracle, hudi-rs (the bronze tables read
without our code), and each other: the two landings must give the same bronze rows but
for the delivery columns (landing file, ingestion time, and the Kafka offset, which an
Avro sink that drops tombstones shifts). A third landing mixes JSON and Avro topics.
"""

from __future__ import annotations

import base64
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import fastavro
import pytest

from ingestion.cdc.avro_records import AvroContainer, connect_schema
from ingestion.cdc.contracts import load_contracts
from ingestion.stream.bronze import bronze_contracts
from lakehouse.cli import main
from simulator.avro import AvroRowEncoder
from simulator.oracle import load_oracle
from tests.stream.conftest import ingest, simulate
from tests.stream.judge import (
    compare_events,
    dead_letter_tuples_bronze,
    dead_letter_tuples_oracle,
    hudi_commits,
    hudi_rows,
    normalize,
)

DATABASE = "bronze_avro"
SMALL = dict(scale=0.004, changes=1200, inject_bad=8, truncate=True, seed=23)
#: Bronze columns that depend on the delivery, not on the event.
DELIVERY_COLUMNS = {"_cdc_landing_file", "_cdc_ingested_at", "_cdc_kafka_offset"}


@pytest.fixture(scope="module")
def json_run(tmp_path_factory, spark):
    base = tmp_path_factory.mktemp("landing-json")
    simulate(base / "landing", fmt="mixed", **SMALL)
    return ingest(spark, base, DATABASE)


@pytest.fixture(scope="module")
def avro_run(tmp_path_factory, spark):
    base = tmp_path_factory.mktemp("landing-avro")
    simulate(base / "landing", fmt="mixed", file_format="avro", partitioner="daily", **SMALL)
    return ingest(spark, base, DATABASE)


def _event_rows(lake: Path, table: str) -> Counter:
    rows = hudi_rows(lake / "bronze" / table)
    return Counter(tuple(sorted((k, normalize(v)) for k, v in row.items()
                                if not k.startswith("_hoodie") and k not in DELIVERY_COLUMNS)) for row in rows)


def test_the_avro_landing_is_avro_in_the_daily_layout(avro_run) -> None:
    files = [p for p in (avro_run.landing / "topics").rglob("*") if p.is_file()]
    assert files and all(p.name.endswith(".avro") for p in files)
    assert all(p.parent.name.startswith("day=") and p.parent.parent.name.startswith("month=") for p in files)
    # a healthy file is an object container with Debezium's connect.name annotations in its writer schema
    sale = next(p for p in files if p.name.startswith("tickit.ecomm.sale+") and p.stat().st_size > 2000)
    with sale.open("rb") as handle:
        reader = fastavro.reader(handle)
        schema = str(reader.writer_schema)
        assert next(iter(reader)) is not None
    assert "io.debezium.time.Timestamp" in schema and "connect.name" in schema


def test_avro_bronze_holds_every_oracle_event_exactly_once(avro_run) -> None:
    report = compare_events(avro_run.lake, avro_run.landing)
    assert all(expected > 0 for expected, _, _ in report.values()), report
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report
    for table, contract in bronze_contracts().items():
        columns = set(hudi_rows(avro_run.lake / "bronze" / table)[0])
        assert {name for name, _ in contract.bronze_columns} <= columns, table


def test_avro_dead_letters_are_the_oracle_s(avro_run) -> None:
    expected = dead_letter_tuples_oracle(avro_run.landing)
    assert len(expected) == SMALL["inject_bad"]
    assert dead_letter_tuples_bronze(avro_run.lake) == expected
    reasons = Counter(reason for (_, _, reason, *_rest) in expected.elements())
    assert reasons["bad_encoding"] == 2  # a truncated container and a file that is not Avro


def test_a_damaged_avro_file_is_a_dead_letter_naming_it_and_the_rest_lands(avro_run) -> None:
    dead = [r for r in hudi_rows(avro_run.lake / "bronze" / "dead_letter") if r["reason"] == "bad_encoding"]
    assert len(dead) == 2
    for row in dead:
        assert row["raw_is_base64"] and row["landing_file"].endswith(".avro")
        assert row["landing_file"] in row["message"], row["message"]
        raw = base64.b64decode(row["raw_line"])
        data = (avro_run.landing / row["landing_file"]).read_bytes()
        assert data.endswith(raw)  # the undecodable bytes, to the end of the file
        assert AvroContainer.open(data, row["landing_file"]).header_error or "truncated" in row["message"]
    assert any("truncated" in row["message"] for row in dead)
    # every other file of those topics landed: the batches went on
    assert sum(avro_run.summary.events.values()) > 10_000


def test_json_and_avro_landings_of_one_seed_give_the_same_bronze_rows(json_run, avro_run) -> None:
    assert {t: m for t, (_, _, m) in compare_events(json_run.lake, json_run.landing).items() if m} == {}
    for table in bronze_contracts():
        json_rows, avro_rows = _event_rows(json_run.lake, table), _event_rows(avro_run.lake, table)
        assert sum(json_rows.values()) > 0, table
        assert json_rows == avro_rows, table
    # the same bad events, as their formats carry them
    json_reasons = Counter(r["reason"] for r in hudi_rows(json_run.lake / "bronze" / "dead_letter"))
    avro_reasons = Counter(r["reason"] for r in hudi_rows(avro_run.lake / "bronze" / "dead_letter"))
    assert sum(json_reasons.values()) == sum(avro_reasons.values()) == SMALL["inject_bad"]
    # the JSON landing has tombstone lines, the Avro sink dropped them
    assert load_oracle(str(json_run.landing)).tombstones > 0 == load_oracle(str(avro_run.landing)).tombstones
    assert sum(r.tombstones for r in json_run.summary.reports) == load_oracle(str(json_run.landing)).tombstones


def test_avro_batches_report_files_bytes_and_records(avro_run) -> None:
    lines = avro_run.log_lines()
    landed = [p for p in (avro_run.landing / "topics").rglob("*") if p.is_file()]
    assert sum(line["files"] for line in lines) == len(landed)
    assert sum(line["bytes"] for line in lines) == sum(p.stat().st_size for p in landed)
    oracle = load_oracle(str(avro_run.landing))
    stored = sum(len(oracle.events(t)) for t in oracle.tables)
    assert sum(sum(line["events"].values()) for line in lines) - sum(line["duplicates_in_batch"] for line in lines) \
        >= stored
    assert sum(line["bad_events"] for line in lines) == SMALL["inject_bad"]


def test_avro_positions_are_unique_per_key_and_offsets_follow_the_records(avro_run) -> None:
    rows = hudi_rows(avro_run.lake / "bronze" / "sale")
    keys = Counter((r["salesid"], r["_cdc_position"]) for r in rows)
    assert max(keys.values()) == 1
    by_file: dict[str, list[int]] = {}
    for row in rows:
        by_file.setdefault(row["_cdc_landing_file"], []).append(row["_cdc_kafka_offset"])
    for name, offsets in by_file.items():
        start = int(name.rsplit("+", 1)[1].removesuffix(".avro"))
        records = sum(1 for _ in fastavro.reader((avro_run.landing / name).open("rb")))
        assert start <= min(offsets) and max(offsets) < start + records, name


def test_rerunning_the_avro_landing_writes_nothing(avro_run, spark) -> None:
    before = {t: hudi_commits(avro_run.lake / "bronze" / t) for t in ("sale", "event", "dead_letter")}
    again = ingest(spark, avro_run.base, DATABASE)
    assert all(not r.commits for r in again.summary.reports)
    assert {t: hudi_commits(avro_run.lake / "bronze" / t) for t in before} == before


@pytest.mark.slow
def test_a_reset_replays_the_avro_landing_in_several_batches_and_stores_each_event_once(avro_run, spark) -> None:
    replay = ingest(spark, avro_run.base, DATABASE, reset=True, max_files_per_trigger=12)
    assert len(replay.summary.reports) >= 3
    assert sum(sum(r.events.values()) for r in replay.summary.reports) > 0  # every file was read again
    assert {t: m for t, (_, _, m) in compare_events(avro_run.lake, avro_run.landing).items() if m} == {}
    assert dead_letter_tuples_bronze(avro_run.lake) == dead_letter_tuples_oracle(avro_run.landing)


def test_a_landing_with_json_and_avro_topics(tmp_path, spark) -> None:
    """ecomm's topics land as JSON lines, the others as Avro; one ingest reads both."""
    options: dict[str, Any] = dict(scale=0.003, changes=500, inject_bad=0, seed=5)
    simulate(tmp_path / "as-json", fmt="mixed", partitioner="daily", **options)
    simulate(tmp_path / "as-avro", fmt="envelope", file_format="avro", **options)
    landing = tmp_path / "landing"
    shutil.copytree(tmp_path / "as-json" / "_oracle", landing / "_oracle")  # the events are the same
    for source in ("as-json", "as-avro"):
        for topic in (tmp_path / source / "topics").iterdir():
            if topic.name.startswith("tickit.ecomm.") == (source == "as-json"):
                shutil.copytree(topic, landing / "topics" / topic.name)
    run = ingest(spark, tmp_path, DATABASE + "_mixed")
    report = compare_events(run.lake, run.landing)
    assert all(expected > 0 for expected, _, _ in report.values()), report
    assert {t: m for t, (_, _, m) in report.items() if m} == {}, report
    assert not (run.lake / "bronze" / "dead_letter").exists() or not hudi_rows(run.lake / "bronze" / "dead_letter")
    suffixes = {table: {Path(r["_cdc_landing_file"]).suffix for r in hudi_rows(run.lake / "bronze" / table)}
                for table in ("sale", "event", "user")}
    assert suffixes == {"sale": {".json"}, "event": {".avro"}, "user": {".avro"}}


def test_simulate_cli_format_avro_and_shape(tmp_path, capsys) -> None:
    landing = tmp_path / "landing"
    flags = ["--landing", str(landing), "--scale", "0.002", "--changes", "60", "--seed", "3", "--quiet",
             "--start-time", "2026-01-01T00:00:00Z"]
    assert main(["simulate", *flags, "--format", "avro", "--shape", "flattened"]) == 0
    assert "avro files" in capsys.readouterr().out
    files = [p for p in (landing / "topics").rglob("*") if p.is_file()]
    assert files and all(p.suffix == ".avro" for p in files)
    sale = [p for p in files if p.name.startswith("tickit.ecomm.sale+")]
    with sale[0].open("rb") as handle:
        record = next(iter(fastavro.reader(handle)))
    assert record["__op"] == "r" and record["__deleted"] == "false" and "salesid" in record
    # the shape given twice, two ways: a usage error
    assert main(["simulate", *flags, "--format", "mixed", "--shape", "flattened"]) == 2
    # the old spelling still means JSON lines of that shape
    assert main(["simulate", "--landing", str(tmp_path / "old"), *flags[2:], "--format", "flattened"]) == 0
    assert all(p.suffix == ".json" for p in (tmp_path / "old" / "topics").rglob("*") if p.is_file())


@pytest.mark.parametrize("shape", ["envelope", "wrapped", "flattened"])
def test_simulated_writer_schemas_read_back_as_the_connect_schemas_debezium_had(shape: str) -> None:
    """The simulator's Connect -> Avro (AvroData's rules) and the reader's Avro -> Connect are inverses on rows."""
    for contract in load_contracts().values():
        encoder = AvroRowEncoder(contract)
        connect = connect_schema(encoder.writer_schema(shape).avro)
        row = connect if shape == "flattened" else next(f for f in connect["fields"] if f["field"] == "after")
        fields = {f["field"]: f for f in row["fields"]}
        expected = encoder._row(precise=shape == "wrapped")["fields"]  # the simulator's Connect row schema
        for spec in expected:
            got = fields[spec["field"]]
            assert got["type"] == {"float64": "double"}.get(spec["type"], spec["type"]), (contract.name, spec)
            assert got.get("name") == spec.get("name") and got.get("parameters") == spec.get("parameters")
            assert got["optional"] == spec["optional"], (contract.name, spec)


def test_the_same_seed_gives_byte_identical_avro_files(tmp_path) -> None:
    trees = []
    for name in ("one", "two"):
        simulate(tmp_path / name, fmt="mixed", file_format="avro", scale=0.002, changes=200, inject_bad=8, seed=9)
        root = tmp_path / name
        trees.append({str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()})
    assert trees[0] == trees[1]
    assert any(name.endswith(".avro") for name in trees[0])
