"""The vectorized fast path gives, line for line, what the pure-Python parser gives.

The oracle is always ``ingestion.cdc.parser.parse_line`` (and, for whole chunks, the
``LAKEHOUSE_INGEST_PARSER=python`` path): every line the fast path turns into a bronze
row must be a ``BronzeEvent`` with exactly that row (values and Arrow types), every line
it counts as a tombstone must be a ``Tombstone``, and every other line goes to the
Python parser itself. No expected value here is written down from the fast path.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import json
import os
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestion.cdc.avro_records import AvroContainer
from ingestion.cdc.contracts import TableContract, topic_map
from ingestion.cdc.landing import landing_file_name
from ingestion.cdc.parser import BronzeEvent, DeadLetter, Tombstone, parse_line
from ingestion.stream import parse as parse_module
from ingestion.stream.bronze import arrow_schema
from ingestion.stream.fast_parse import PARSER_ENV, SEQ, FastFileParser, delivery_for, parser_mode
from tests.cdc.conftest import CUSTOMERS, FIXTURES, PRODUCTS, fixture_contract
from tests.cdc.test_fixture_events import ENVELOPE_FIXTURES
from tests.stream.conftest import simulate

INGESTED_AT = dt.datetime(2026, 11, 22, 12, 0, 0)
FIXTURE_TOPIC = "fixture.topic"


# -- the line-level oracle comparison -----------------------------------------------------
def assert_same_as_python(contract: TableContract, lines: list[bytes], *, topics=None, topic: str | None = None,
                          partition: int = 2, start_offset: int = 1000):
    """Run the fast path on ``lines`` (one landing file) and check every line against ``parse_line``."""
    topic = topic or contract.topics[0]
    topics = topics if topics is not None else {topic: contract}
    landing_file = f"topics/{topic}/partition={partition}/{landing_file_name(topic, partition, start_offset)}"
    content = b"".join(line + b"\n" for line in lines)
    outcome = FastFileParser(contract, INGESTED_AT).parse(
        lines, content, delivery_for(topic, partition, start_offset, landing_file))
    expected = [parse_line(line, topic=topic, partition=partition, offset=start_offset + index,
                           landing_file=landing_file, ingested_at=INGESTED_AT, contracts=topics)
                for index, line in enumerate(lines)]
    schema = arrow_schema(contract.bronze_columns)
    empty = schema.append(pa.field(SEQ, pa.int64())).empty_table()
    fast = pa.concat_tables(outcome.tables) if outcome.tables else empty
    fast = fast.take(pc.sort_indices(fast.column(SEQ)))
    fast_lines = fast.column(SEQ).to_pylist()
    fallback = set(outcome.fallback)
    assert len(set(fast_lines)) == len(fast_lines) and not fallback & set(fast_lines)
    others = [i for i in range(len(lines)) if i not in fallback and i not in set(fast_lines)]
    assert len(others) == outcome.tombstones
    for index in others:
        assert isinstance(expected[index], Tombstone), (lines[index], expected[index])
    for index in fast_lines:
        result = expected[index]
        assert isinstance(result, BronzeEvent), (lines[index], result)
        assert not result.extra_columns, (lines[index], result.extra_columns)
    python = pa.Table.from_pylist([expected[i].row for i in fast_lines], schema=schema)
    fast = fast.drop_columns([SEQ])
    assert fast.schema == python.schema
    for name in python.column_names:
        if not fast.column(name).equals(python.column(name)):
            got, want = fast.column(name).to_pylist(), python.column(name).to_pylist()
            diffs = [(fast_lines[i], g, w) for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
            raise AssertionError(f"column {name}: fast != python at (line, fast, python) {diffs[:3]}")
    return outcome, expected


# -- simulated landing zones ----------------------------------------------------------------
@functools.cache
def simulated_landing(fmt: str, file_format: str = "json") -> Path:
    """A small landing zone of shape ``fmt`` in ``file_format`` with every kind of bad line, built once
    per session (removed at exit)."""
    import atexit
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix=f"fast-parse-{fmt}-{file_format}-"))
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    landing = base / "landing"
    simulate(landing, fmt=fmt, scale=0.01, changes=1500, inject_bad=40, truncate=True, file_format=file_format)
    return landing


def landing_files(landing: Path) -> list[Path]:
    """The landed JSON and Avro files (a landing holds one of the two)."""
    return sorted([*(landing / "topics").rglob("*.json"), *(landing / "topics").rglob("*.avro")])


@pytest.mark.parametrize("fmt", ["envelope", "flattened", "mixed"])
def test_simulated_files_line_by_line(fmt):
    topics = topic_map()
    fast_rows = 0
    for path in landing_files(simulated_landing(fmt)):
        topic = path.parent.parent.name
        contract = topics.get(topic)
        if contract is None:  # the injected unknown topic: no fast path, only Python
            continue
        lines = path.read_bytes().split(b"\n")[:-1]
        start = int(path.stem.rsplit("+", 1)[1])
        partition = int(path.stem.rsplit("+", 2)[1])
        outcome, _ = assert_same_as_python(contract, lines, topics=topics, topic=topic, partition=partition,
                                           start_offset=start)
        fast_rows += sum(t.num_rows for t in outcome.tables)
    assert fast_rows > 1000  # the fast path really ran


def _chunks(landing: Path, mode: str) -> list[pa.RecordBatch]:
    # paths as Spark's binaryFile source reports them: "file:" + the path, not %-encoded
    batches = [pa.RecordBatch.from_arrays([pa.array([f"file:{path}"]), pa.array([path.read_bytes()], pa.binary())],
                                          names=["path", "content"]) for path in landing_files(landing)]
    previous = os.environ.get(PARSER_ENV)
    os.environ[PARSER_ENV] = mode
    try:
        return list(parse_module.parse_file_batches(iter(batches), str(landing), INGESTED_AT))
    finally:
        if previous is None:
            os.environ.pop(PARSER_ENV)
        else:
            os.environ[PARSER_ENV] = previous


def assert_same_chunks(landing: Path) -> None:
    assert_same_chunk_batches(_chunks(landing, "fast"), _chunks(landing, "python"))


def assert_same_chunk_batches(fast: list[pa.RecordBatch], python: list[pa.RecordBatch]) -> None:
    """The chunk rows of the fast path equal the Python path's: kinds, counts, payload tables."""
    assert len(fast) == len(python)
    for got, want in zip(fast, python, strict=True):
        for column in ("kind", "table_name", "rows", "oldest_source_ts"):
            assert got.column(column).equals(want.column(column)), column
        for kind, a, b in zip(got.column("kind").to_pylist(), got.column("payload").to_pylist(),
                              want.column("payload").to_pylist(), strict=True):
            if kind in (parse_module.FILES, parse_module.TOMBSTONE):
                assert a == b
            else:
                got_table, want_table = parse_module.from_ipc(a), parse_module.from_ipc(b)
                assert got_table.schema == want_table.schema
                assert got_table.equals(want_table), kind


@pytest.mark.parametrize("fmt", ["envelope", "flattened", "mixed"])
def test_simulated_chunks_are_identical_to_the_python_path(fmt):
    assert_same_chunks(simulated_landing(fmt))


@pytest.mark.parametrize("fmt", ["envelope", "mixed"])
def test_simulated_avro_chunks_are_identical_to_the_python_path(fmt):
    """Avro landing files: the vectorized path (``ingestion.stream.fast_avro``) gives the event
    parser's rows, dead letters and tombstones; and it really takes the envelope files' rows."""
    landing = simulated_landing(fmt, file_format="avro")
    assert_same_chunks(landing)
    parser = parse_module.LineParser(INGESTED_AT)
    fast_rows = python_rows = precise_rows = 0
    for path in landing_files(landing):
        content = path.read_bytes()
        outcome = parser._fast_avro(str(path.relative_to(landing)), content)
        if outcome is not None:
            fast_rows += sum(t.num_rows for t in outcome.fast.tables)
            python_rows += len(outcome.python)
            # Connect Decimal bytes (decimal.handling.mode=precise), which the mixed landing has
            if '"org.apache.kafka.connect.data.Decimal"' in json.dumps(AvroContainer.open(content, "f").schema.connect):
                precise_rows += sum(t.num_rows for t in outcome.fast.tables)
    assert fast_rows > 1000 and fast_rows > 10 * python_rows, (fast_rows, python_rows)
    assert precise_rows > 0 or fmt == "envelope"


def test_chunks_with_drift_bad_paths_and_unknown_topics(tmp_path):
    """Python rows with drift columns merge with fast rows in line order, in ``event_table``'s schema."""
    landing = tmp_path / "landing"
    simulate(landing, fmt="mixed", scale=0.002, changes=200, inject_bad=16)
    files = landing_files(landing)
    sale = next(p for p in files if "tickit.ecomm.sale+" in p.name and p.read_bytes().count(b"\n") > 4)
    lines = sale.read_bytes().split(b"\n")[:-1]
    for index in (1, 3):
        event = json.loads(lines[index])
        image = event.get("payload", event)
        image = image.get("after") or image.get("before") or image if "op" in image else image
        image["zz_new_column"] = index
        image["aa_note"] = "drift"
        lines[index] = json.dumps(event).encode()
    sale.write_bytes(b"".join(line + b"\n" for line in lines))
    odd = landing / "topics" / "tickit.ecomm.sale" / "partition=0" / "not-a-landing-name.json"
    odd.write_bytes(lines[0] + b"\nnull\n")
    assert_same_chunks(landing)


# -- the project's Debezium fixtures ---------------------------------------------------------
def _fixture_lines(relative: str) -> list[bytes]:
    text = (FIXTURES / relative).read_text()
    if relative.endswith((".jsonl", ".txt")):
        return [line.encode() for line in text.splitlines() if line.strip()]
    document = json.loads(text)
    lines = [json.dumps(document, separators=(",", ":")).encode()]
    if isinstance(document, dict) and "payload" in document:  # the same event without the schema wrapper
        lines.append(json.dumps(document["payload"], separators=(",", ":")).encode())
    return lines


FIXTURE_CASES = {
    **{relative: spec for relative, spec in ENVELOPE_FIXTURES.items()},
    "_verbatim_sources/flink__debezium-postgres-data-schema-exclude.txt": ("postgres", PRODUCTS),
    "_verbatim_sources/flink__debezium-data-schema-include.txt": ("mysql", PRODUCTS),
    "flattened/pg_unwrap_rewrite_all16.jsonl": ("postgres", PRODUCTS),
    "flattened/pg_unwrap_read.json": ("postgres", PRODUCTS),
    "flattened/pg_unwrap_create.json": ("postgres", PRODUCTS),
    "flattened/pg_unwrap_update.json": ("postgres", PRODUCTS),
    "flattened/pg_unwrap_delete_rewrite.json": ("postgres", PRODUCTS),
    "flattened/pg_unwrap_default_update.json": ("postgres", PRODUCTS),
    "tombstone/pg_tombstone_after_delete.json": ("postgres", PRODUCTS),
}


def test_every_fixture_file_is_covered():
    files = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*") if p.is_file() and p.suffix != ".md"}
    assert files == set(FIXTURE_CASES)


@pytest.mark.parametrize("relative", sorted(FIXTURE_CASES))
def test_fixture_events(relative):
    connector, columns = FIXTURE_CASES[relative]
    contract = fixture_contract(connector, columns)
    lines = _fixture_lines(relative)
    assert_same_as_python(contract, lines)
    assert_same_as_python(contract, [*lines, b"null", *lines])  # several lines, re-deliveries, a tombstone


def test_fixture_bare_envelopes_take_the_fast_path():
    contract = fixture_contract("postgres", PRODUCTS)
    lines = _fixture_lines("_verbatim_sources/flink__debezium-postgres-data-schema-exclude.txt")
    outcome, _ = assert_same_as_python(contract, lines)
    assert sum(t.num_rows for t in outcome.tables) == len(lines) and not outcome.fallback


# -- hand-written edge cases ---------------------------------------------------------------
SALE = topic_map()["tickit.ecomm.sale"]
DATE = topic_map()["tickit.ecomm.date"]
VENUE = topic_map()["tickit.ems.venue"]
USER = next(c for c in topic_map().values() if c.name == "user")


def _sale_envelope(**changes) -> dict:
    after = {"salesid": 7, "listid": 1, "sellerid": 2, "buyerid": 3, "eventid": 4, "dateid": 1827, "qtysold": 2,
             "pricepaid": 572.0, "commission": 85.8, "saletime": 1205799257000}
    event = {"before": None, "after": after,
             "source": {"version": "2.7.3.Final", "connector": "mysql", "ts_ms": 1767225660000, "db": "ecomm",
                        "table": "sale", "gtid": "3e11:1", "file": "mysql-bin.000003", "pos": 126415, "row": 0},
             "op": "c", "ts_ms": 1767225660276, "transaction": None}
    for path, value in changes.items():
        _set(event, path, value)
    return event


def _set(event: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    target = event
    for part in parents:
        target = target[part]
    if value is _DROP:
        target.pop(last, None)
    else:
        target[last] = value


_DROP = object()

EDGE_LINES = [
    _sale_envelope(),
    _sale_envelope(**{"after.pricepaid": 1.005}),
    _sale_envelope(**{"after.pricepaid": 99999999.99}),
    _sale_envelope(**{"after.pricepaid": "10.00"}),
    _sale_envelope(**{"after.pricepaid": -0.0}),
    _sale_envelope(**{"after.pricepaid": 1e2}),
    _sale_envelope(**{"after.salesid": 2**31}),
    _sale_envelope(**{"after.salesid": -(2**31)}),
    _sale_envelope(**{"after.salesid": 7.0}),
    _sale_envelope(**{"after.salesid": True}),
    _sale_envelope(**{"after.salesid": None}),
    _sale_envelope(**{"after.salesid": _DROP}),
    _sale_envelope(**{"after.saletime": 253402300799999}),
    _sale_envelope(**{"after.saletime": 253402300800000}),
    _sale_envelope(**{"after.saletime": -62135596800000}),
    _sale_envelope(**{"after.saletime": -62135596800001}),
    _sale_envelope(**{"after.saletime": "2008-03-18 00:14:17"}),
    _sale_envelope(**{"source.ts_ms": 0}),
    _sale_envelope(**{"source.ts_ms": 0, "ts_ms": 0}),
    _sale_envelope(**{"source.ts_ms": None}),
    _sale_envelope(**{"source.ts_ms": -5}),
    _sale_envelope(**{"source": None}),
    _sale_envelope(**{"source.file": "mysql-bin.x"}),
    _sale_envelope(**{"source.file": "mysql-bin.000000000000000000000003"}),
    _sale_envelope(**{"source.file": None, "source.pos": None, "source.row": None}),
    _sale_envelope(**{"source.pos": -1}),
    _sale_envelope(**{"source.gtid": None, "transaction": {"id": "tx-9", "total_order": 1}}),
    _sale_envelope(**{"source.gtid": None, "transaction": {"id": 12}}),
    _sale_envelope(**{"source.db": None, "source.table": None}),
    _sale_envelope(**{"op": "d"}),
    _sale_envelope(**{"op": "d", "before": {"salesid": 7}}),
    _sale_envelope(**{"op": "t", "after": None}),
    _sale_envelope(**{"op": "m"}),
    _sale_envelope(**{"op": "C"}),
    _sale_envelope(**{"op": None}),
    _sale_envelope(**{"after.extra_col": 1}),
    _sale_envelope(**{"after": None}),
    _sale_envelope(**{"after": []}),
]
RAW_EDGE_LINES = [
    b"null", b" null ", b"", b"{", b"{}", b"[]", b'"text"', b"{\"op\":\"c\"}",
    json.dumps(_sale_envelope()).encode() + b" " + json.dumps(_sale_envelope()).encode(),
    json.dumps(_sale_envelope()).encode() + b"\r",
    json.dumps(_sale_envelope()).replace('"eventid": 4', '"eventid": NaN').encode(),
    json.dumps(_sale_envelope()).replace('"eventid": 4', '"eventid": 4, "eventid": 5').encode(),
    json.dumps(_sale_envelope()).replace('"connector": "mysql"', '"connector": "caf\\u00e9 \\ud800"').encode(),
    json.dumps(_sale_envelope()).replace('"mysql"', '"caf\xc3\xa9"').encode("latin-1"),
    json.dumps(_sale_envelope()).encode()[:-1] + b", \"x\": \"\xff\"}",
    json.dumps({"schema": None, "payload": None}).encode(),
    b"{" + b'"a":[' * 600 + b"1" + b"]" * 600 + b"}",
]


def test_hand_written_envelope_edges():
    lines = [json.dumps(event).encode() for event in EDGE_LINES] + RAW_EDGE_LINES
    assert_same_as_python(SALE, lines)
    for line in lines:  # alone, too: a line never depends on its neighbours
        assert_same_as_python(SALE, [line])


def _flat_sale(**changes) -> dict:
    event = {**_sale_envelope()["after"], "__deleted": "false", "__op": "c", "__db": "ecomm", "__table": "sale",
             "__source_ts_ms": 1767225660000, "__file": "mysql-bin.000003", "__pos": 5, "__row": 0, "__gtid": "g"}
    for path, value in changes.items():
        _set(event, path, value)
    return event


FLAT_EDGE_LINES = [
    _flat_sale(),
    _flat_sale(__deleted="true"),
    _flat_sale(__deleted="true", __op="d"),
    _flat_sale(__deleted=True, __op="d"),
    _flat_sale(__deleted="yes"),
    _flat_sale(__deleted=_DROP),
    _flat_sale(__op="t", salesid=None),
    _flat_sale(__source_ts_ms=0),
    _flat_sale(__source_ts_ms=-1),
    _flat_sale(__source_ts_ms=None),
    _flat_sale(__source_ts_ms=1.5),
    _flat_sale(__file=_DROP, __pos=_DROP, __row=_DROP),
    _flat_sale(__file=None, __pos=None, __row=None, __gtid=None),
    _flat_sale(op="c"),
    _flat_sale(after=None),
    _flat_sale(drift_col="x"),
    _flat_sale(__unknown=[1, 2]),
    _flat_sale(salesid=None),
]


def test_hand_written_flattened_edges():
    lines = [json.dumps(event).encode() for event in FLAT_EDGE_LINES]
    assert_same_as_python(SALE, lines)
    for line in lines:
        assert_same_as_python(SALE, [line])


def _line(event: dict) -> bytes:
    return json.dumps(event).encode()


#: Files a whole-file read must not take at face value (``FastFileParser._read_clean``):
#: Arrow accepts what Python rejects, or a line of another shape hides among the others.
WHOLE_FILE_TRAPS = {
    "NaN in an unknown source field": [_sale_envelope(**{"source.extra": float("nan")})],
    "Infinity nested in a list": [_sale_envelope(**{"source.extra": {"a": [1.5, float("inf")]}})],
    "-Infinity in the envelope": [_sale_envelope(**{"ts_ms": float("-inf")})],
    "a flattened line among envelopes": [_flat_sale()],
    "a schema-wrapped line after the first": [{"schema": {"type": "struct"}, "payload": _sale_envelope()}],
    "a payload key": [{**_sale_envelope(), "payload": 1}],
}


@pytest.mark.parametrize("trap", sorted(WHOLE_FILE_TRAPS))
def test_a_file_read_whole_gives_the_python_result(trap):
    valid = [_sale_envelope(**{"after.salesid": n, "source.pos": n}) for n in range(1, 4)]
    lines = [_line(valid[0]), *(_line(event) for event in WHOLE_FILE_TRAPS[trap]), _line(valid[1]), _line(valid[2])]
    assert_same_as_python(SALE, lines)
    flat = [_line(_flat_sale(salesid=n, __pos=n)) for n in range(1, 4)]
    assert_same_as_python(SALE, [flat[0], *(_line(event) for event in WHOLE_FILE_TRAPS[trap]), *flat[1:]])


def test_a_file_of_both_shapes_stays_on_the_fast_path():
    envelopes = [_line(_sale_envelope(**{"after.salesid": n, "source.pos": n})) for n in range(1, 4)]
    flat = [_line(_flat_sale(salesid=n, __pos=n)) for n in range(4, 7)]
    for lines in ([envelopes[0], flat[0], envelopes[1]], [flat[1], envelopes[2], flat[2]]):
        outcome, _ = assert_same_as_python(SALE, lines)
        assert not outcome.fallback and sum(t.num_rows for t in outcome.tables) == 3


def test_a_clean_file_with_tombstones_is_read_whole():
    lines = [_line(_sale_envelope(**{"after.salesid": n, "source.pos": n})) for n in range(1, 4)]
    lines = [lines[0], b"null", lines[1], b"null", lines[2]]
    outcome, _ = assert_same_as_python(SALE, lines)
    assert outcome.tombstones == 2 and not outcome.fallback
    assert sum(t.num_rows for t in outcome.tables) == 3


def _venue_line(**after) -> bytes:
    event = {"before": None, "after": {"venueid": 235, "venuename": "Arena", "venuecity": "NYC", "venuestate": "NY",
                                       "venueseats": 0, **after},
             "source": {"ts_ms": 1767225855941, "db": "tickit", "table": "venue", "txId": 696, "lsn": 33583196},
             "op": "c", "ts_ms": 1767225855941}
    return json.dumps(event).encode()


def _json_or_none(line: bytes) -> object:
    """A landed line as JSON, or None for the simulator's planted malformed lines."""
    try:
        return json.loads(line)
    except ValueError:
        return None


def test_other_connectors_and_types():
    assert_same_as_python(VENUE, [_venue_line(), _venue_line(venuename=12345), _venue_line(venueseats=None),
                                  _venue_line(venueid="235")])
    user_lines = [line for path in landing_files(simulated_landing("envelope")) if "crm.user" in path.name
                  for line in path.read_bytes().split(b"\n")[:40] if line]
    assert user_lines
    assert_same_as_python(USER, user_lines)
    date_lines = [line for path in landing_files(simulated_landing("mixed")) if "ecomm.date" in path.name
                  for line in path.read_bytes().split(b"\n")[:60] if line]
    assert_same_as_python(DATE, date_lines)
    odd = [event for event in map(_json_or_none, date_lines) if isinstance(event, dict) and "before" in event][:1]
    assert odd
    for value in (2, True, -1, None, 2932897, -719163):
        for event in odd:
            mutated = copy.deepcopy(event)
            (mutated["after"] or mutated["before"])["holiday" if isinstance(value, bool) else "caldate"] = value
            assert_same_as_python(DATE, [json.dumps(mutated).encode()])


# -- PostgreSQL rows without lsn: the position from source.sequence ------------------------------
PG_PRODUCTS = fixture_contract("postgres", PRODUCTS)
#: Sequences in Debezium's own spelling (Jackson, ``SourceInfo.sequence()``): the fast path renders them.
FAST_SEQUENCES = ['["100","250"]', '[null,"26441400"]', '["26441168","26441400"]', '["24023119",null]',
                  '["0","0"]', '["1","999999999999999999"]']
#: Sequences the fast path leaves to Python: other spellings Python accepts (spaces, escapes, 19-20
#: digits), malformed ones (dead letters), and JSON kinds other than a string (read errors).
PYTHON_SEQUENCES = ['[ "100" , "250" ]', '["\\u0031","2"]', '["1","9999999999999999999"]',
                    '["1","99999999999999999999"]', '["1","100000000000000000000"]', "[null,null]", '["26441400"]',
                    '["1","2","3"]', "[26441168,26441400]", '["-5","2"]', '["0x1A","2"]', "not json", "", 26441400,
                    ["1", "2"]]


def _pg_incremental(sequence, key: int = 101) -> bytes:
    """pg_real_snapshot_read.json's row as an incremental-snapshot read: no lsn/txId/xmin, a sequence."""
    event = json.loads((FIXTURES / "postgres" / "pg_real_snapshot_read.json").read_text())
    event["after"]["id"] = key
    event["source"].update(version="2.7.3.Final", snapshot="incremental", sequence=sequence, txId=None, lsn=None,
                           xmin=None)
    return json.dumps(event).encode()


def _pg_flat_incremental(sequence, key: int = 101) -> bytes:
    """pg_unwrap_read.json with add.fields=...,lsn,sequence for an incremental-snapshot row (``__lsn`` null)."""
    event = json.loads((FIXTURES / "flattened" / "pg_unwrap_read.json").read_text())
    event.update(id=key, __lsn=None, __sequence=sequence)
    return json.dumps(event).encode()


@pytest.mark.parametrize("make", [_pg_incremental, _pg_flat_incremental])
def test_sequence_only_rows_take_the_fast_path_with_the_python_position(make):
    lines = [make(sequence, key) for key, sequence in enumerate(FAST_SEQUENCES, start=101)]
    outcome, expected = assert_same_as_python(PG_PRODUCTS, lines)
    assert not outcome.fallback and sum(t.num_rows for t in outcome.tables) == len(lines)
    assert [e.row["_cdc_position"][:20] for e in expected] == [
        "00000000000000000250", "00000000000026441400", "00000000000026441400", "00000000000024023119",
        "00000000000000000000", "00999999999999999999"]
    assert all(not e.degraded and e.row["_cdc_position"].endswith("-" + "0" * 20) for e in expected)


@pytest.mark.parametrize("make", [_pg_incremental, _pg_flat_incremental])
def test_sequence_rows_among_others_give_the_python_result(make):
    """Every sequence, alone and in one file with streamed, degraded and re-delivered rows."""
    streamed = _fixture_lines("postgres/pg_real_update.json")
    flat = _fixture_lines("flattened/pg_unwrap_update.json")
    degraded = [make(None)]  # no lsn, no txId, no sequence: still the degraded position
    with_lsn = json.loads(make('["1","2"]'))
    if "source" in with_lsn:
        with_lsn["source"].update(lsn=34131104, sequence="not a sequence")  # lsn present: sequence not read
    else:
        with_lsn.update(__lsn=34131104, __sequence="not a sequence")
    sequences = [make(s) for s in FAST_SEQUENCES + PYTHON_SEQUENCES]
    lines = [*streamed, *sequences[:3], b"null", *degraded, json.dumps(with_lsn).encode(), *flat, *sequences[3:],
             sequences[0]]
    outcome, expected = assert_same_as_python(PG_PRODUCTS, lines)
    python_only = {i for i, line in enumerate(lines) if line in sequences[len(FAST_SEQUENCES):]}
    fast = {i for i, line in enumerate(lines[:-1]) if line in sequences[: len(FAST_SEQUENCES)]}
    assert python_only <= set(outcome.fallback)  # (the split budget may send the last line along)
    assert not (fast | {len(streamed) + 4, len(streamed) + 5}) & set(outcome.fallback)
    assert expected[len(streamed) + 4].degraded
    assert expected[len(streamed) + 5].row["_cdc_position"] == "00000000000034131104-00000000000000000000"
    for line in sequences:
        assert_same_as_python(PG_PRODUCTS, [line])


def test_parser_mode_from_the_environment(monkeypatch):
    monkeypatch.delenv(PARSER_ENV, raising=False)
    assert parser_mode() == "fast"
    monkeypatch.setenv(PARSER_ENV, "python")
    assert parser_mode() == "python"
    monkeypatch.setenv(PARSER_ENV, "numba")
    with pytest.raises(ValueError, match=PARSER_ENV):
        parser_mode()


# -- hypothesis: mutations of valid lines ------------------------------------------------------
@functools.cache
def valid_lines() -> list[tuple[str, bytes]]:
    """(topic, line) samples of every table and shape from the simulated landing zones."""
    samples: list[tuple[str, bytes]] = []
    topics = topic_map()
    for fmt in ("envelope", "mixed"):
        for path in landing_files(simulated_landing(fmt)):
            topic = path.parent.parent.name
            if topic in topics:
                samples.extend((topic, line) for line in path.read_bytes().split(b"\n")[:6] if _is_event(line))
    return samples


def _is_event(line: bytes) -> bool:
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return isinstance(event, dict)


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
    st.sampled_from(["c", "u", "d", "r", "t", "m", "x", "true", "false", "12.50", "1e3", "mysql-bin.000004",
                     "0000002a:00000ac0:0002", "2026-01-01T00:00:00Z"]),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _paths(value, prefix=()):
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from _paths(child, (*prefix, key))


@st.composite
def mutated_lines(draw):
    topic, line = draw(st.sampled_from(valid_lines()))
    event = json.loads(line)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = list(_paths(event))
        action = draw(st.sampled_from(["drop", "set", "set", "add", "op", "pk"]))
        target = event.get("payload", event)
        if action in ("op", "pk") and not isinstance(target, dict):
            continue  # an earlier mutation replaced the payload by a scalar: nothing to mutate there
        if action == "op":
            target["__op" if "__op" in target else "op"] = draw(st.sampled_from(["c", "u", "d", "r", "t", "m", "x",
                                                                                 None, 1]))
            continue
        if action == "pk":
            contract = topic_map()[topic]
            image = target.get("after") or target.get("before") if "op" in target else target
            if isinstance(image, dict):
                image[contract.primary_key[0]] = draw(st.sampled_from([None, "1", 1.5, -1, 2**40]))
            continue
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = event
        for part in path[:-1]:
            parent = parent[part]
        if action == "drop":
            parent.pop(path[-1])
        elif action == "set":
            parent[path[-1]] = draw(SCALARS)
        elif isinstance(parent.get(path[-1]), dict):
            parent[path[-1]][draw(st.sampled_from(["zz", "__x", "op", "extra"]))] = draw(SCALARS)
    text = json.dumps(event, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        text = text[: draw(st.integers(min_value=0, max_value=len(text)))]
    return topic, text.encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutated_lines(), min_size=1, max_size=4), st.integers(min_value=0, max_value=3))
def test_mutated_lines_give_the_python_result(mutated, valid_count):
    """A mutated line, alone and among valid lines of its table, gives what ``parse_line`` gives."""
    topics = topic_map()
    for topic, line in mutated:
        contract = topics[topic]
        assert_same_as_python(contract, [line], topics=topics, topic=topic)
        neighbours = [v for t, v in valid_lines() if t == topic][:valid_count]
        assert_same_as_python(contract, [*neighbours, line, *neighbours], topics=topics, topic=topic)


def test_fixture_contracts_fit_the_fast_path():
    assert FastFileParser(fixture_contract("mysql", CUSTOMERS), INGESTED_AT).enabled


def test_chunk_tables_keep_the_order_of_their_first_row(tmp_path):
    """A table whose lines all go to Python comes first when its first line does, as in the Python path."""
    source = simulated_landing("mixed")
    landing = tmp_path / "landing"
    picks = {"tickit.ecomm.date": lambda line: line.startswith(b'{"schema"'),  # wrapper lines: Python only
             "tickit.ecomm.listing": lambda line: line.startswith(b'{"before"')}  # envelopes: fast path
    for topic, keep in picks.items():
        lines = [line for path in landing_files(source) if path.parent.parent.name == topic
                 for line in path.read_bytes().split(b"\n") if keep(line)][:50]
        assert lines, topic
        folder = landing / "topics" / topic / "partition=0"
        folder.mkdir(parents=True)
        (folder / landing_file_name(topic, 0, 0)).write_bytes(b"".join(line + b"\n" for line in lines))
    chunk = _chunks(landing, "fast")[0]
    assert chunk.column("table_name").to_pylist()[1:3] == ["date", "listing"]
    assert_same_chunks(landing)


def test_a_decimal_beyond_its_precision_is_dead_lettered_as_by_python():
    """Arrow's JSON reader puts 1000000 into a decimal(8,2) without complaint; the contract says type_mismatch."""
    fitting = dict(FLAT_EDGE_LINES[0], pricepaid=999999.99)
    too_big = dict(FLAT_EDGE_LINES[0], pricepaid=1000000)
    too_small = dict(FLAT_EDGE_LINES[0], pricepaid=-1000000)
    lines = [json.dumps(event).encode() for event in (fitting, too_big, too_small)]
    outcome, expected = assert_same_as_python(SALE, lines)
    # the contract's decimal(8,2) holds at most 999999.99: only the first line is an event
    assert isinstance(expected[0], BronzeEvent) and expected[0].row["pricepaid"] == Decimal("999999.99")
    for result in expected[1:]:
        assert isinstance(result, DeadLetter) and result.reason == "type_mismatch", result
    assert set(outcome.fallback) >= {1, 2}  # the fast path hands both to Python, which dead-letters them
    assert_same_as_python(SALE, [lines[1]])
