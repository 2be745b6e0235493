"""Schema changes of a source table reach bronze typed (policy ``evolve``), in JSON and Avro landing files.

One landing, three micro-batches (one file each), as a PostgreSQL table changes under the
connector: JSON lines with their schema in the original shape; an Avro file after
``ALTER TABLE venue ALTER venueseats TYPE bigint`` (a batch that widens a column and adds
none); then JSON lines: one in the original shape again (narrower than the table), one
after ``ADD vip boolean``, one whose ``venuename`` became an integer (incompatible: a dead
letter) and one without a schema carrying a column nobody declared (text). The judge is
hudi-rs reading the bronze table (types and values, written out here from the events), and
the Thrift server must show the same.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa

from ingestion.stream.reading import read_latest
from simulator.avro import WriterSchema, connect_to_avro, container_bytes
from tests.stream.conftest import ingest
from tests.stream.judge import hudi_rows

DATABASE = "bronze_evolution"
TOPIC = "tickit.ems.venue"
ORIGINAL = [("venueid", "int32"), ("venuename", "string"), ("venuecity", "string"), ("venuestate", "string"),
            ("venueseats", "int32")]
WIDENED = [*ORIGINAL[:4], ("venueseats", "int64")]
ALTERED = [*WIDENED, ("vip", "boolean")]
NAME_AS_INT = [ORIGINAL[0], ("venuename", "int32"), *ORIGINAL[2:]]


def _field(name: str, connect_type: str, optional: bool = True) -> dict:
    return {"type": connect_type, "optional": optional, "field": name}


SOURCE = {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source", "field": "source",
          "fields": [_field("version", "string", False), _field("connector", "string", False),
                     _field("name", "string", False), _field("ts_ms", "int64", False), _field("db", "string", False),
                     _field("schema", "string", False), _field("table", "string", False), _field("txId", "int64"),
                     _field("lsn", "int64")]}


def _schema(columns: list[tuple[str, str]]) -> dict:
    row = {"type": "struct", "optional": True, "name": "tickit.ems.venue.Value",
           "fields": [_field(name, kind, name != "venueid") for name, kind in columns]}
    return {"type": "struct", "optional": False, "name": "tickit.ems.venue.Envelope",
            "fields": [{**row, "field": "before"}, {**row, "field": "after"}, SOURCE, _field("op", "string", False),
                       _field("ts_ms", "int64")]}


def _payload(row: dict, lsn: int) -> dict:
    source = {"version": "2.7.0.Final", "connector": "postgresql", "name": "tickit", "ts_ms": 1_700_000_000_000 + lsn,
              "db": "tickit", "schema": "ems", "table": "venue", "txId": lsn, "lsn": lsn}
    return {"before": None, "after": row, "source": source, "op": "c", "ts_ms": 1_700_000_000_000 + lsn}


def _venue(venueid: int, seats: int | None, **extra) -> dict:
    return {"venueid": venueid, "venuename": f"v{venueid}", "venuecity": "c", "venuestate": "NY",
            "venueseats": seats, **extra}


def _land(landing: Path) -> None:
    folder = landing / "topics" / TOPIC / "partition=0"
    folder.mkdir(parents=True)
    first = [json.dumps({"schema": _schema(ORIGINAL), "payload": _payload(_venue(i, 100 * i), 10 + i)})
             for i in (1, 2)]
    widened = WriterSchema.of(connect_to_avro(_schema(WIDENED)))
    avro = container_bytes(widened, [_payload(_venue(3, 5_000_000_000), 13), _payload(_venue(4, 10), 14)],
                           b"0123456789abcdef")
    renamed = {**_venue(6, 6), "venuename": 9}
    last = [json.dumps({"schema": _schema(ORIGINAL), "payload": _payload(_venue(5, 7), 15)}),
            json.dumps({"schema": _schema(ALTERED), "payload": _payload(_venue(8, 80, vip=True), 16)}),
            json.dumps({"schema": _schema(NAME_AS_INT), "payload": _payload(renamed, 17)}),
            json.dumps(_payload(_venue(7, 70, note={"floor": 2}), 18))]
    files = [("0000000000.json", "\n".join(first).encode() + b"\n"), ("0000000002.avro", avro),
             ("0000000004.json", "\n".join(last).encode() + b"\n")]
    for index, (suffix, content) in enumerate(files):
        path = folder / f"{TOPIC}+0+{suffix}"
        path.write_bytes(content)
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))  # Spark takes files in mtime order


def test_added_and_widened_columns_land_typed_and_incompatible_ones_are_dead_letters(
        tmp_path, spark, thrift_server, capsys) -> None:
    _land(tmp_path / "landing")
    run = ingest(spark, tmp_path, DATABASE, thrift_server, max_files_per_trigger=1)
    assert len(run.summary.reports) == 3
    table = read_latest(str(run.lake / "bronze" / "venue"))
    assert table is not None
    types = {name: table.schema.field(name).type for name in ("venueseats", "vip", "note")}
    assert types == {"venueseats": pa.int64(), "vip": pa.bool_(), "note": pa.string()}
    names = [n for n in table.column_names if not n.startswith("_hoodie")]
    assert names[-3:] == ["_cdc_source_date", "note", "vip"]  # added columns after the metadata
    rows = {r["venueid"]: (r["venueseats"], r["vip"], r["note"]) for r in hudi_rows(run.lake / "bronze" / "venue")}
    assert rows == {1: (100, None, None), 2: (200, None, None), 3: (5_000_000_000, None, None), 4: (10, None, None),
                    5: (7, None, None), 8: (80, True, None), 7: (70, None, '{"floor": 2}')}
    dead = [r for r in hudi_rows(run.lake / "bronze" / "dead_letter")]
    assert [(d["reason"], d["kafka_offset"], d["table_name"]) for d in dead] == [("incompatible_schema", 6, "venue")]
    assert "'venuename'" in dead[0]["message"]
    got = thrift_server.sql(f"SELECT venueid, venueseats, vip, note FROM {DATABASE}.venue")
    assert sorted(got) == sorted((venueid, *values) for venueid, values in rows.items())
    # the metastore's schema too (DESCRIBE, dbt's catalog, the docs site): registered again
    described = {row[0]: row[1] for row in thrift_server.sql(f"DESCRIBE {DATABASE}.venue")}
    assert (described["venueseats"], described["vip"], described["note"]) == ("bigint", "boolean", "string")
    # lakehouse status: what bronze gained and widened beyond the contract, and what needs a decision
    from lakehouse.status import table_status

    status = table_status(str(run.lake), "venue", None, dt.datetime(2030, 1, 1))
    assert (status.drift_columns, status.widened_columns) == (["note", "vip"], ["venueseats int->bigint"])
    changes = [report.drift for report in run.summary.reports]
    assert changes[1:] == [{"venue": ["venueseats bigint"]}, {"venue": ["note string", "vip boolean"]}]
    assert status.schema_version == 3
    _check_the_schema_history(run, spark, tmp_path, thrift_server, capsys)


def _landed(file_index: int, offset: int) -> tuple[str, int, int, str]:
    """(topic, partition, offset, landing file) of the event at ``offset`` in the ``file_index``th file of ``_land``."""
    suffix = ["0000000000.json", "0000000002.avro", "0000000004.json"][file_index]
    return TOPIC, 0, offset, f"{TOPIC}+0+{suffix}"


def _check_the_schema_history(run, spark, tmp_path: Path, thrift_server, capsys) -> None:
    """``bronze.schema_change``: one version per batch that changed the table (1 is the contract), each
    change with the first event carrying it (offsets from the landing layout above), shown by
    ``lakehouse contracts history``; the same events again under a new checkpoint record nothing twice."""
    history = [r for r in hudi_rows(run.lake / "bronze" / "schema_change")]
    got = sorted((r["table_name"], r["schema_version"], r["column_name"], r["change"], r["from_type"], r["to_type"],
                  (r["first_topic"], r["first_kafka_partition"], r["first_kafka_offset"],
                   Path(r["first_landing_file"]).name), r["first_source_ts"]) for r in history)
    # the Avro file's first event (offset 2, source time ts_ms of lsn 13) carries the wide venueseats;
    # in the third file, the line at offset 5 (lsn 16) the vip, the schemaless one at offset 7 (lsn 18) the note
    ts = dt.datetime.fromtimestamp(1_700_000_000, dt.UTC).replace(tzinfo=None)
    assert got == [
        ("venue", 2, "venueseats", "widened", "int", "bigint", _landed(1, 2), ts + dt.timedelta(milliseconds=13)),
        ("venue", 3, "note", "added", None, "string", _landed(2, 7), ts + dt.timedelta(milliseconds=18)),
        ("venue", 3, "vip", "added", None, "boolean", _landed(2, 5), ts + dt.timedelta(milliseconds=16)),
    ]
    # registered beside the dead letters: analysts and dbt read it
    assert sorted(thrift_server.sql(f"SELECT schema_version, column_name FROM {DATABASE}.schema_change")) \
        == [(2, "venueseats"), (3, "note"), (3, "vip")]
    from lakehouse.cli import main

    capsys.readouterr()
    assert main(["contracts", "history", "--lake", str(run.lake), "--table", "venue"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("venue v2: widened venueseats int -> bigint; first seen tickit.ems.venue partition 0 "
                               "offset 2 ")
    assert lines[1].startswith("venue v3: added note string; first seen tickit.ems.venue partition 0 offset 7 ")
    # the same events again under a new checkpoint: bronze already holds every change, none is recorded again
    again = ingest(spark, tmp_path, DATABASE, thrift_server, max_files_per_trigger=1, reset=True)
    assert all(not report.schema_versions for report in again.summary.reports)
    assert len(hudi_rows(run.lake / "bronze" / "schema_change")) == 3
