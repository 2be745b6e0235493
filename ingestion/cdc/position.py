"""``_cdc_position``: one fixed-width string per event that sorts in the connector's order.

The position is the event's **identity** and its **truncate order**. Bronze keys every
change by primary key + ``_cdc_position``, so a re-delivered copy (same source position,
new Kafka offset) is stored once; and a truncate, which has no key and no order against
row events in Kafka, removes a key whose latest event has a smaller position. The order
of the events of one key is their Kafka offset (``cdc_order`` in dbt), not the position:
Debezium guarantees per-key order only as Kafka order. ``ts_ms`` is no substitute for a
position: the events of one transaction share it.

Format (every part is exactly 20 characters; parts are joined by ``-``):

* **number part**: the non-negative integer in decimal, left-padded with ``0`` to
  20 digits (``lpad(cast(x as string), 20, '0')`` in Spark SQL; 20 digits hold any
  unsigned 64-bit value);
* **LSN part** (SQL Server): the ``xxxxxxxx:xxxxxxxx:xxxx`` LSN with the colons
  removed, lower-case hex: exactly 20 characters (``lower(replace(lsn, ':', ''))``);
* a **missing** part (absent or JSON null) is all zeros, so snapshot rows, which
  carry fewer position fields, sort first.

Per connector (the contract's ``connector`` field):

=============  ====================================================  ===========
connector      parts, in order                                       width
=============  ====================================================  ===========
``postgres``   ``lsn``, ``txId``; or, when ``lsn`` is absent,        41
               ``sequence[1]`` (else ``sequence[0]``), ``txId``
               (zeros unless present)
``mysql``      binlog file index, ``pos``, ``row``                   62
``sqlserver``  ``commit_lsn`` (LSN), ``change_lsn`` (LSN),            62
               ``event_serial_no``
degraded       ``t-`` + source ``ts_ms``, Kafka partition, offset    64
=============  ====================================================  ===========

**PostgreSQL ``sequence``**: ``source.sequence`` (flattened: ``__sequence``, with
ExtractNewRecordState ``add.fields=...,sequence``) is the JSON text of
``["<lastCommitLsn>", "<lsn>"]``, either element null (``[null,"26441400"]``). Incremental
snapshot rows (``snapshot: "incremental"``) carry no ``lsn``, ``txId`` or ``xmin``
(DBZ-4329) but do carry ``sequence``, whose ``lsn`` is the stream position when the
chunk's window closed; its LSN part is that element (else the last commit LSN), so the
row compares with truncates by stream position and is not degraded. ``sequence`` is
read only when ``lsn`` is absent; then a value that is not a JSON array of two decimal
digit strings or nulls, not both null, is a ``PositionError`` naming ``sequence``.

The MySQL binlog file index is the number after the last ``.`` of the file name
(``mysql-bin.000003`` -> 3), so a rollover to the next file sorts after every
position of the previous one.

**Degraded mode**: an event without any of the connector's position fields
(``POSITION_SOURCE_FIELDS``), typically an ExtractNewRecordState-flattened event whose
transform was not configured to add them (``__lsn``/``__txId``/``__sequence``,
``__file``/``__pos``/``__row``, ``__change_lsn``/``__commit_lsn``/``__event_serial_no``),
is ordered by ``__source_ts_ms``, then Kafka partition, then Kafka offset. Such a
position starts with ``t-`` (``is_degraded``); re-delivered duplicates of such events
get a new offset and therefore cannot be told apart, and events of one transaction are
ordered by offset only. Status output should say so when a table holds ``t-`` positions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ingestion.errors import IngestionError

PART_WIDTH = 20
SEPARATOR = "-"
DEGRADED_PREFIX = "t-"
ZERO_PART = "0" * PART_WIDTH

#: How one source field becomes a part (module docstring): a number, a MySQL binlog file's index,
#: a SQL Server LSN, or PostgreSQL's ``lsn`` (without one: the LSN part of its ``sequence``).
NUMBER = "number"
BINLOG_INDEX = "binlog_index"
SQLSERVER_LSN = "sqlserver_lsn"
LSN_OR_SEQUENCE = "lsn_or_sequence"

#: The parts of each connector's position, in order: (envelope ``source`` field, encoding). The
#: reference (``render_position``) and the vectorized parser (``ingestion.stream.fast_parse``) both
#: render from this.
POSITION_PARTS: dict[str, tuple[tuple[str, str], ...]] = {
    "postgres": (("lsn", LSN_OR_SEQUENCE), ("txId", NUMBER)),
    "mysql": (("file", BINLOG_INDEX), ("pos", NUMBER), ("row", NUMBER)),
    "sqlserver": (("commit_lsn", SQLSERVER_LSN), ("change_lsn", SQLSERVER_LSN), ("event_serial_no", NUMBER)),
}

#: Source fields that make up the position of each connector (envelope ``source`` names).
POSITION_FIELDS: dict[str, tuple[str, ...]] = {
    connector: tuple(name for name, _ in parts) for connector, parts in POSITION_PARTS.items()
}

#: PostgreSQL's ``source.sequence``: the LSN part of an event without ``lsn`` (module docstring).
SEQUENCE_FIELD = "sequence"

#: Every source field a position is rendered from: ``POSITION_FIELDS`` plus PostgreSQL's ``sequence``.
POSITION_SOURCE_FIELDS: dict[str, tuple[str, ...]] = {
    **POSITION_FIELDS,
    "postgres": (*POSITION_FIELDS["postgres"], SEQUENCE_FIELD),
}

_MAX_NUMBER = 10**PART_WIDTH - 1
#: A SQL Server LSN as Debezium writes it (``0000002a:00000b18:0003``), unanchored: each regex engine
#: anchors it its own way.
SQLSERVER_LSN_PATTERN = "([0-9a-fA-F]{8}):([0-9a-fA-F]{8}):([0-9a-fA-F]{4})"
_SQLSERVER_LSN = re.compile(f"^{SQLSERVER_LSN_PATTERN}\\Z")
_BINLOG_INDEX = re.compile(r"\.(\d+)$")
_DIGITS = re.compile(r"[0-9]+\Z")


class PositionError(IngestionError, ValueError):
    """A position field has a value that cannot be rendered (names the field and value)."""


def number_part(value: Any, field: str) -> str:
    """A non-negative integer (or its decimal string) as 20 zero-padded digits; None -> zeros."""
    if value is None:
        return ZERO_PART
    if isinstance(value, bool):
        raise PositionError(f"position field {field!r} must be an integer, got {value!r}")
    if isinstance(value, str):
        if not value.isascii() or not value.isdigit():
            raise PositionError(f"position field {field!r} must be an integer, got {value!r}")
        value = int(value)
    if not isinstance(value, int):
        raise PositionError(f"position field {field!r} must be an integer, got {value!r}")
    if value < 0 or value > _MAX_NUMBER:
        raise PositionError(f"position field {field!r} is out of range: {value}")
    return f"{value:0{PART_WIDTH}d}"


def sqlserver_lsn_part(value: Any, field: str) -> str:
    """A SQL Server LSN ``0000002a:00000ac0:0002`` as 20 lower-case hex digits; None -> zeros."""
    if value is None:
        return ZERO_PART
    match = _SQLSERVER_LSN.match(value) if isinstance(value, str) else None
    if not match:
        raise PositionError(f"position field {field!r} is not a SQL Server LSN (8:8:4 hex): {value!r}")
    return "".join(match.groups()).lower()


def binlog_index(file_name: Any) -> int | None:
    """The numeric suffix of a MySQL binlog file name (``mysql-bin.000003`` -> 3); None stays None."""
    if file_name is None:
        return None
    match = _BINLOG_INDEX.search(file_name) if isinstance(file_name, str) else None
    if not match:
        raise PositionError(f"position field 'file' is not a binlog name ending in .<digits>: {file_name!r}")
    return int(match.group(1))


def sequence_lsn_part(value: Any, field: str = SEQUENCE_FIELD) -> str:
    """The LSN part of a PostgreSQL ``sequence`` ``["<lastCommitLsn>", "<lsn>"]``: the second
    element, else the first, as 20 zero-padded digits.

    Anything but the JSON text of a two-element array of decimal digit strings or nulls,
    not both null, raises ``PositionError`` naming ``field`` and the value.
    """
    elements: Any = None
    if isinstance(value, str):
        try:
            elements = json.loads(value)
        except (ValueError, RecursionError):
            elements = None
    well_formed = (
        isinstance(elements, list)
        and len(elements) == 2
        and all(e is None or (isinstance(e, str) and _DIGITS.match(e)) for e in elements)
        and any(e is not None for e in elements)
    )
    if not well_formed:
        raise PositionError(
            f"position field {field!r} is not a PostgreSQL sequence (JSON array [lastCommitLsn, lsn] of two "
            f"decimal strings or nulls, not both null): {value!r}"
        )
    chosen = elements[1] if elements[1] is not None else elements[0]
    if len(chosen.lstrip("0")) > PART_WIDTH:
        raise PositionError(f"position field {field!r} is out of range: {value!r}")
    return f"{int(chosen):0{PART_WIDTH}d}"


def render_position(connector: str, fields: Mapping[str, Any]) -> str:
    """The ``_cdc_position`` of one event from its source position fields.

    ``fields`` maps the envelope ``source`` field names of ``POSITION_SOURCE_FIELDS[connector]``
    to their values (absent or None -> zeros); other fields are ignored, so a whole
    ``source`` object will do. PostgreSQL's ``sequence`` is read only when ``lsn`` is absent.
    """
    if connector not in POSITION_PARTS:
        raise ValueError(f"unknown connector {connector!r}; expected one of {sorted(POSITION_FIELDS)}")
    return SEPARATOR.join(_part(name, kind, fields) for name, kind in POSITION_PARTS[connector])


def _part(name: str, kind: str, fields: Mapping[str, Any]) -> str:
    """One part of a position: source field ``name`` in encoding ``kind`` (``POSITION_PARTS``)."""
    value = fields.get(name)
    if kind == BINLOG_INDEX:
        return number_part(binlog_index(value), name)
    if kind == SQLSERVER_LSN:
        return sqlserver_lsn_part(value, name)
    if kind == LSN_OR_SEQUENCE:
        sequence = fields.get(SEQUENCE_FIELD)
        if value is None and sequence is not None:
            return sequence_lsn_part(sequence)
    return number_part(value, name)


def render_degraded_position(source_ts_ms: int, kafka_partition: int, kafka_offset: int) -> str:
    """The degraded-mode position: ``t-`` + source ts_ms, Kafka partition, Kafka offset."""
    return DEGRADED_PREFIX + SEPARATOR.join(
        [
            number_part(source_ts_ms, "__source_ts_ms"),
            number_part(kafka_partition, "kafka partition"),
            number_part(kafka_offset, "kafka offset"),
        ]
    )


def has_position_fields(connector: str, fields: Mapping[str, Any]) -> bool:
    """True when at least one of the connector's position source fields is present (not None).

    A present PostgreSQL ``sequence`` counts even when malformed: ``render_position`` then
    rejects it rather than the event silently becoming degraded.
    """
    return any(fields.get(name) is not None for name in POSITION_SOURCE_FIELDS[connector])


def is_degraded(position: str) -> bool:
    """True for a degraded-mode position (flattened event without position fields)."""
    return position.startswith(DEGRADED_PREFIX)


def position_width(connector: str) -> int:
    """The fixed width of a connector's positions (degraded positions are 64 wide)."""
    count = len(POSITION_FIELDS[connector])
    return count * PART_WIDTH + (count - 1) * len(SEPARATOR)
