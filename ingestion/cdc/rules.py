"""The bronze rules, stated once for both parsers.

Two parsers turn Debezium events into bronze rows: ``ingestion.cdc.parser`` (the
reference, pure Python, one event at a time) and ``ingestion.stream.fast_parse`` (pyarrow,
a landing file at a time, for the lines it can prove valid). They must agree row for row
(``tests/stream/test_fast_parse.py`` checks it differentially), so the facts both apply
are read from here: which op codes become rows and which mark a row deleted, where each
connector keeps its transaction id, and the value ranges bronze accepts. The source
position (``ingestion.cdc.position``) and the ``_cdc_*`` column spec
(``ingestion.cdc.contracts.BRONZE_METADATA_COLUMNS``) are the other two such modules.
"""

from __future__ import annotations

import datetime as dt

#: Debezium op codes that become bronze rows: create, update, delete, read (snapshot), truncate.
SUPPORTED_OPS = ("c", "u", "d", "r", "t")
#: Op codes Debezium emits that bronze refuses (dead letter ``unsupported_op``): ``m``, a message.
UNSUPPORTED_OPS = ("m",)
#: The op of a table-level truncate (no row image, no key).
TRUNCATE_OP = "t"
#: Ops whose bronze row has ``_cdc_is_deleted`` set: a delete, and a truncate (every row goes).
DELETED_OPS = ("d", TRUNCATE_OP)

#: Where each connector keeps its own transaction id (envelope ``source`` field; ``__<name>`` when
#: flattened): ``_cdc_tx_id``.
TX_ID_FIELD = {"postgres": "txId", "mysql": "gtid", "sqlserver": "commit_lsn"}

#: Integer contract types and the values they hold.
INT_RANGES = {"int": (-(2**31), 2**31 - 1), "bigint": (-(2**63), 2**63 - 1)}

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = EPOCH.date()
#: Epoch days a ``date`` column holds: Python's ``date.min`` to ``date.max``.
DATE_EPOCH_DAYS = ((dt.date.min - EPOCH_DATE).days, (dt.date.max - EPOCH_DATE).days)
#: Epoch microseconds a ``timestamp`` column (and ``_cdc_source_ts``) holds: ``datetime.min`` to
#: ``datetime.max``.
TIMESTAMP_EPOCH_MICROS = (
    (dt.datetime.min - EPOCH) // dt.timedelta(microseconds=1),
    (dt.datetime.max - EPOCH) // dt.timedelta(microseconds=1),
)
