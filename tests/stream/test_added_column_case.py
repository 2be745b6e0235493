"""Added columns are compared as Spark and the metastore compare them: without case, across events.

``parse_line`` rejects an event whose added column collides (but for case) with the table's
columns or with another column of the same event. Two events of one task that add ``Foo`` and
``foo`` would each pass alone and give bronze two columns Spark sees as one: the parse task's
``LineParser`` turns the later one into an ``incompatible_schema`` dead letter, in both parser
modes and across the chunks of a task.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from ingestion.cdc.parser import INCOMPATIBLE_SCHEMA, BronzeEvent, DeadLetter
from ingestion.stream.parse import LineParser

TOPIC = "tickit.ecomm.sale"
LANDING_FILE = f"topics/{TOPIC}/partition=0/{TOPIC}+0+0000000000.json"
SALE = {"salesid": 1, "listid": 1, "sellerid": 1, "buyerid": 2, "eventid": 3, "dateid": 1827, "qtysold": 1,
        "pricepaid": "100.00", "commission": "15.00", "saletime": 1230768000000}


def line(salesid: int, pos: int, **added: object) -> bytes:
    source = {"connector": "mysql", "file": "binlog.000001", "pos": pos, "row": 0, "ts_ms": 1, "db": "ecomm",
              "table": "sale"}
    return json.dumps({"before": None, "after": {**SALE, "salesid": salesid, **added}, "source": source,
                       "op": "c", "ts_ms": 1}).encode()


@pytest.mark.parametrize("split", [False, True], ids=["one chunk", "two chunks"])
def test_a_column_added_again_under_another_case_is_a_dead_letter(split: bool) -> None:
    parser = LineParser(dt.datetime(2026, 11, 29))
    lines = [line(1, 10, Tier="gold"), line(2, 20, tier="silver"), line(3, 30, Tier="bronze"), line(4, 40)]
    chunks = [lines[:1], lines[1:]] if split else [lines]
    events: list[BronzeEvent] = []
    dead: list[DeadLetter] = []
    start = 0
    for chunk in chunks:
        parsed, bad, _ = parser.parse([LANDING_FILE] * len(chunk), list(range(start, start + len(chunk))), chunk)
        events += parsed.get("sale", [])
        dead += bad
        start += len(chunk)
    assert sorted(e.row["salesid"] for e in events) == [1, 3, 4]
    assert [e.added_values for e in events if e.row["salesid"] in (1, 3)] == [{"Tier": "gold"}, {"Tier": "bronze"}]
    [rejected] = dead
    assert (rejected.reason, rejected.offset, rejected.table) == (INCOMPATIBLE_SCHEMA, 1, "sale")
    assert "'tier' differs only in case from column 'Tier'" in rejected.message
    assert json.loads(rejected.raw_line)["after"]["tier"] == "silver"  # the line kept as it came
