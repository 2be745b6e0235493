"""Property-based bad-input tests of the CDC line parser: every line is parsed or dead-lettered.

Each property runs twice: a handful of examples in the default suite, thousands under
``-m reliability``. The oracles are independent of the parser: the generated values and
Debezium's documented encodings (``tests.reliability.events``), and plain Python checks
(``bytes.decode``, ``json.loads``) for what a bad line must be classified as.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ingestion.cdc.parser import (
    BAD_ENCODING,
    MALFORMED_JSON,
    MISSING_PK,
    REASON_CODES,
    TYPE_MISMATCH,
    UNKNOWN_TOPIC,
    BronzeEvent,
    DeadLetter,
    Tombstone,
    parse_line,
)
from tests.reliability.events import (
    EPOCH,
    TOPICS,
    GeneratedEvent,
    drift_column_names,
    json_scalars,
    valid_events,
)
from tests.reliability.figures import record

INGESTED_AT = dt.datetime(2026, 11, 22, 12, 0, 0)
LANDING_FILE = "topics/t/partition=0/t+0+0000000000.json"
FAST = settings(max_examples=15, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BIG = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parse(raw: bytes, topic: str, scenario: str, offset: int = 7):
    """``parse_line`` that counts the call in the figures; an exception is counted and re-raised."""
    try:
        result = parse_line(
            raw, topic=topic, partition=0, offset=offset, landing_file=LANDING_FILE, ingested_at=INGESTED_AT
        )
    except Exception:
        record(scenario, trials=1, events=1, errors=1)
        raise
    assert isinstance(result, BronzeEvent | Tombstone | DeadLetter), type(result)
    if isinstance(result, DeadLetter):
        assert result.reason in REASON_CODES, result.reason
        assert result.message, "a dead letter must say why"
        assert (result.topic, result.offset, result.landing_file) == (topic, offset, LANDING_FILE)
    record(scenario, trials=1, events=1)
    return result


def expected_bad_line_reason(raw: bytes, topic: str) -> str | type | None:
    """What a line that is not a valid event must become, by plain Python; None = undecided here."""
    line = raw.rstrip(b"\r\n")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return BAD_ENCODING
    if text.strip() == "null":
        return Tombstone
    if topic not in TOPICS:
        return UNKNOWN_TOPIC

    def reject(name: str) -> None:
        raise ValueError(name)

    try:
        json.loads(text, parse_constant=reject)
    except (ValueError, RecursionError):
        return MALFORMED_JSON
    return None


def check_classification(raw: bytes, topic: str, scenario: str) -> None:
    result = parse(raw, topic, scenario)
    expected = expected_bad_line_reason(raw, topic)
    if expected is Tombstone:
        assert isinstance(result, Tombstone)
    elif expected is not None:
        assert isinstance(result, DeadLetter) and result.reason == expected, result
    if isinstance(result, DeadLetter) and result.reason == BAD_ENCODING:
        assert result.raw_is_base64
        assert base64.b64decode(result.raw_line) == raw.rstrip(b"\r\n")
    elif isinstance(result, DeadLetter):
        assert not result.raw_is_base64
        assert result.raw_line == raw.rstrip(b"\r\n").decode("utf-8"), "the raw line must be kept verbatim"


def assert_row_matches(result, event: GeneratedEvent) -> None:
    assert isinstance(result, BronzeEvent), result
    assert result.table == event.contract.name
    for name, value in event.expected_row.items():
        assert result.row[name] == value, (name, result.row[name], value)
        if value is not None:
            assert type(result.row[name]) is type(value), (name, type(result.row[name]), type(value))
    assert result.row["_cdc_op"] == event.op
    assert result.row["_cdc_is_deleted"] is (event.op == "d")
    assert result.row["_cdc_source_ts"] == EPOCH + dt.timedelta(milliseconds=event.source_ts_ms)
    assert result.row["_cdc_source_date"] == result.row["_cdc_source_ts"].date()
    assert result.row["_cdc_topic"] == event.topic
    assert result.row["_cdc_kafka_offset"] == 7


# -- properties ---------------------------------------------------------------------------


def property_with(**strategies):
    """Mark a property with its strategies; ``run`` wraps it with ``@given`` and a settings profile.

    A fresh ``@given`` wrapper per run: hypothesis refuses to apply a second settings object
    to one wrapped test, and the same property runs under both FAST and BIG in one session.
    """
    def mark(body: Callable[..., None]) -> Callable[..., None]:
        body.strategies = strategies
        return body

    return mark


def run(body: Callable[..., None], profile: settings) -> None:
    profile(given(**body.strategies)(body))()


any_topic = st.one_of(st.sampled_from(sorted(TOPICS)), st.text(max_size=30))


@property_with(raw=st.binary(max_size=300), topic=any_topic)
def any_bytes_are_parsed_or_dead_lettered(raw: bytes, topic: str) -> None:
    check_classification(raw, topic, "parser: arbitrary bytes")


@property_with(text=st.text(max_size=200), topic=st.sampled_from(sorted(TOPICS)))
def any_text_is_parsed_or_dead_lettered(text: str, topic: str) -> None:
    raw = text.encode("utf-8", errors="surrogatepass")
    check_classification(raw, topic, "parser: arbitrary text")


@property_with(event=valid_events())
def valid_events_are_parsed_exactly(event: GeneratedEvent) -> None:
    result = parse(event.line, event.topic, "parser: valid events (envelope + flattened)")
    if not isinstance(result, BronzeEvent):
        record("parser: valid events (envelope + flattened)", lost=1)
    assert_row_matches(result, event)
    assert result.extra_columns == {}


@property_with(event=valid_events(), data=st.data())
def truncated_lines_are_dead_lettered(event: GeneratedEvent, data: st.DataObject) -> None:
    line = event.line
    cut = data.draw(st.integers(1, len(line) - 1), label="cut")
    result = parse(line[:cut], event.topic, "parser: truncated lines")
    assert isinstance(result, DeadLetter)
    assert result.reason in (MALFORMED_JSON, BAD_ENCODING), result


@property_with(event=valid_events(), data=st.data())
def corrupted_bytes_never_raise(event: GeneratedEvent, data: st.DataObject) -> None:
    line = bytearray(event.line)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        line[data.draw(st.integers(0, len(line) - 1))] = data.draw(st.integers(0, 255))
    check_classification(bytes(line), event.topic, "parser: corrupted bytes")


@property_with(event=valid_events(), topic=st.text(min_size=1, max_size=40))
def unknown_topics_are_dead_lettered(event: GeneratedEvent, topic: str) -> None:
    assume(topic not in TOPICS)
    result = parse(event.line, topic, "parser: unknown topics")
    assert isinstance(result, DeadLetter) and result.reason == UNKNOWN_TOPIC
    assert result.table is None


def _image(event: GeneratedEvent) -> dict:
    if event.flattened:
        return event.event
    return event.event["before" if event.op == "d" else "after"]


@property_with(event=valid_events(), extra=st.dictionaries(drift_column_names, json_scalars, min_size=1, max_size=4))
def added_columns_are_kept_as_extra(event: GeneratedEvent, extra: dict) -> None:
    extra = {k: v for k, v in extra.items() if k not in event.expected_row}
    assume(extra)
    _image(event).update(extra)
    result = parse(event.line, event.topic, "parser: schema drift (added columns)")
    assert_row_matches(result, event)
    assert result.extra_columns == extra


@property_with(event=valid_events(), data=st.data())
def removed_columns_become_null_or_missing_pk(event: GeneratedEvent, data: st.DataObject) -> None:
    column = data.draw(st.sampled_from(sorted(event.expected_row)), label="removed column")
    del _image(event)[column]
    result = parse(event.line, event.topic, "parser: schema drift (removed columns)")
    if column in event.contract.primary_key:
        assert isinstance(result, DeadLetter) and result.reason == MISSING_PK, result
    else:
        event.expected_row[column] = None
        assert_row_matches(result, event)


@property_with(event=valid_events(), data=st.data())
def retyped_columns_are_type_mismatch(event: GeneratedEvent, data: st.DataObject) -> None:
    column = data.draw(st.sampled_from(sorted(event.expected_row)), label="retyped column")
    column_type = event.contract.column(column).type
    _image(event)[column] = {"unexpected": 1} if column_type == "string" else [1, "x"]
    result = parse(event.line, event.topic, "parser: schema drift (changed types)")
    assert isinstance(result, DeadLetter) and result.reason == TYPE_MISMATCH, result


@property_with(event=valid_events(), ending=st.sampled_from([b"\n", b"\r\n"]))
def line_endings_do_not_matter(event: GeneratedEvent, ending: bytes) -> None:
    result = parse(event.line + ending, event.topic, "parser: line endings")
    assert_row_matches(result, event)


json_values = st.recursive(
    json_scalars | st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**70), 2**70),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


def _paths(value, prefix=()):
    """Every path (tuple of keys/indexes) inside a JSON value, the root excluded."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield (*prefix, key)
        yield from _paths(child, (*prefix, key))


@property_with(event=valid_events(), data=st.data())
def any_field_replaced_by_any_json_never_raises(event: GeneratedEvent, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(list(_paths(event.event))), label="path")
    target = event.event
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(json_values, label="replacement")
    parse(event.line, event.topic, "parser: any field replaced by any JSON")


@property_with(event=valid_events(), ts_ms=st.integers(-(2**63), 2**63))
def any_source_timestamp_is_parsed_or_dead_lettered(event: GeneratedEvent, ts_ms: int) -> None:
    if event.flattened:
        event.event["__source_ts_ms"] = ts_ms
    else:
        event.event["source"]["ts_ms"] = ts_ms
        event.event["ts_ms"] = ts_ms
    result = parse(event.line, event.topic, "parser: any source timestamp")
    try:
        (EPOCH + dt.timedelta(milliseconds=ts_ms)).date()
        representable = ts_ms >= 0 if event.flattened else ts_ms > 0  # envelope: 0 means "absent"
    except OverflowError:
        representable = False
    assert isinstance(result, BronzeEvent) == representable, result


PROPERTIES: list[Callable[[], None]] = [
    any_bytes_are_parsed_or_dead_lettered,
    any_text_is_parsed_or_dead_lettered,
    valid_events_are_parsed_exactly,
    truncated_lines_are_dead_lettered,
    corrupted_bytes_never_raise,
    unknown_topics_are_dead_lettered,
    added_columns_are_kept_as_extra,
    removed_columns_become_null_or_missing_pk,
    retyped_columns_are_type_mismatch,
    line_endings_do_not_matter,
    any_field_replaced_by_any_json_never_raises,
    any_source_timestamp_is_parsed_or_dead_lettered,
]
_IDS = [p.__name__ for p in PROPERTIES]


@pytest.mark.parametrize("prop", PROPERTIES, ids=_IDS)
def test_parser_property_fast(prop: Callable[..., None]) -> None:
    run(prop, FAST)


@pytest.mark.reliability
@pytest.mark.parametrize("prop", PROPERTIES, ids=_IDS)
def test_parser_property_big(prop: Callable[..., None]) -> None:
    run(prop, BIG)


# -- huge and pathological lines (deterministic) ------------------------------------------------


def test_huge_string_value_is_parsed() -> None:
    huge = "x" * (8 * 1024 * 1024)
    line = json.dumps(
        {
            "before": None,
            "after": {"catid": 1, "catgroup": huge, "catname": "n", "catdesc": None},
            "source": {"ts_ms": 1_700_000_000_000, "lsn": 10, "txId": 3},
            "op": "c",
            "ts_ms": 1_700_000_000_001,
        }
    ).encode()
    result = parse(line, "tickit.ems.category", "parser: huge and deep lines")
    assert isinstance(result, BronzeEvent) and result.row["catgroup"] == huge


# Lines this suite's properties found raising instead of being dead-lettered (fixed in b93f7de).
@pytest.mark.parametrize(
    "line",
    [
        b'{"catid":1,"__op":"c","__source_ts_ms":100000000000000000}',
        b'{"after":{"catid":1},"op":"c","source":{"ts_ms":253402300800000,"lsn":1}}',
        b'{"catid":1,"__op":"c","__source_ts_ms":1,"__deleted":[]}',
    ],
    ids=["flattened-ts-out-of-range", "envelope-ts-out-of-range", "deleted-flag-unhashable"],
)
def test_found_bad_lines_are_dead_lettered(line: bytes) -> None:
    result = parse(line, "tickit.ems.category", "parser: regressions found by hypothesis")
    assert isinstance(result, DeadLetter), result


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"[" * 200_000 + b"]" * 200_000, MALFORMED_JSON),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, MALFORMED_JSON),
        (b"\xff" * (4 * 1024 * 1024), BAD_ENCODING),
        (b"{" * (4 * 1024 * 1024), MALFORMED_JSON),
    ],
    ids=["deep-array", "deep-object", "4MiB-invalid-utf8", "4MiB-unclosed"],
)
def test_pathological_lines_are_dead_lettered(raw: bytes, reason: str) -> None:
    result = parse(raw, "tickit.ems.category", "parser: huge and deep lines")
    assert isinstance(result, DeadLetter) and result.reason == reason, result
