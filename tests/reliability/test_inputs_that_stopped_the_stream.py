"""Inputs that once stopped the ingestion for good or lost events without a word (issue 60).

A small simulated landing is ingested once; then files land in Kafka partition 9 of the sale
topic (the simulator writes partitions 0-2) and a second ``ingest --once`` runs:

* a line whose added column nests 990 levels deep (passes ``json.loads``; the parser's
  re-encoding used to overflow the recursion: exit 1 on every rerun), beside a good event;
* a file whose name holds a colon (Hadoop's ``URISyntaxException`` on every run);
* events adding ``PricePaid`` beside ``pricepaid``, ``_CDC_OP``, ``_HOODIE_COMMIT_TIME`` (bronze
  then held two columns Spark sees as one) and ``order-id`` (dropped without a word);
* a file whose modification time is 30 days older than the others (``cp -p``, a slow clock:
  skipped by Spark's ``maxFileAge`` with exit 0);
* a gzip bomb (300 MB of zeros in 300 KB), and a 1.1 GiB file (sparse: no disk used).

Judged by hudi-rs: both runs exit 0, bronze equals the oracle, each good planted event is in
bronze once, each bad line is one dead letter with its reason, and the colon file's lines are
dead letters naming it.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest

from ingestion.cdc.parser import BAD_ENCODING, FILE_TOO_LARGE, INCOMPATIBLE_SCHEMA, MALFORMED_JSON
from ingestion.stream.parse import MAX_LANDING_FILE_BYTES
from simulator.oracle import load_oracle
from tests.reliability.figures import record
from tests.reliability.judge import compare_lake, compare_table, hudi_rows
from tests.reliability.processes import cli_env, run

SCENARIO = "inputs that stopped the stream or were lost"
TOPIC = "tickit.ecomm.sale"
PARTITION = 9
#: Fresh sale keys of the good planted events (the simulator's keys stay far below).
DEEP_NEIGHBOUR, OLD_FILE_KEY = 9_200_001, 9_200_002


def _sale_lines(landing: Path, count: int) -> list[dict]:
    """Insert events the simulator landed for the sale topic (``c`` or ``r``: an after image)."""
    found: list[dict] = []
    for path in sorted((landing / "topics" / TOPIC).rglob("*.json")):
        for line in path.read_bytes().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("op") in ("c", "r") and event.get("after"):
                found.append(event)
                if len(found) == count:
                    return found
    raise AssertionError(f"fewer than {count} sale inserts landed")


def _keyed(event: dict, salesid: int, **added: object) -> bytes:
    after = {**event["after"], "salesid": salesid, **added}
    return json.dumps({**event, "after": after}).encode()


def _file(landing: Path, offset: int, suffix: str = ".json") -> Path:
    directory = landing / "topics" / TOPIC / f"partition={PARTITION}"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{TOPIC}+{PARTITION}+{offset:010d}{suffix}"


def plant(landing: Path) -> tuple[Counter, dict[int, int], str]:
    """The planted files; returns the dead letters they must give (topic, partition, offset, reason),
    the fresh keys that must be in bronze (key -> offset) and the colon file's landing path."""
    events = _sale_lines(landing, 8)
    expected: Counter = Counter()
    deep = '{"x":' * 990 + "1" + "}" * 990
    deep_line = _keyed(events[0], 9_200_100, nested="<deep>").replace(b'"<deep>"', deep.encode())
    _file(landing, 500).write_bytes(deep_line + b"\n" + _keyed(events[1], DEEP_NEIGHBOUR) + b"\n")
    expected[(TOPIC, PARTITION, 500, MALFORMED_JSON)] += 1
    colon = _file(landing, 0).with_name("notes:from-operator.json")
    colon.write_bytes(_keyed(events[2], 9_200_200) + b"\n" + _keyed(events[3], 9_200_201) + b"\n")
    names = [{"PricePaid": 1}, {"_CDC_OP": "x"}, {"_HOODIE_COMMIT_TIME": "x"}, {"order-id": 7}]
    _file(landing, 600).write_bytes(b"\n".join(
        _keyed(events[4], 9_200_300 + i, **added) for i, added in enumerate(names)) + b"\n")
    expected.update({(TOPIC, PARTITION, 600 + i, INCOMPATIBLE_SCHEMA): 1 for i in range(len(names))})
    bomb = _file(landing, 800, ".json.gz")
    with gzip.open(bomb, "wb", compresslevel=1) as handle:
        for _ in range(300):
            handle.write(b"\0" * (1 << 20))
    expected[(TOPIC, PARTITION, 800, BAD_ENCODING)] += 1
    with open(_file(landing, 900), "wb") as huge:
        huge.truncate(MAX_LANDING_FILE_BYTES + (100 << 20))
    expected[(TOPIC, PARTITION, 900, FILE_TOO_LARGE)] += 1
    old = _file(landing, 700)
    old.write_bytes(_keyed(events[5], OLD_FILE_KEY) + b"\n")
    month_ago = time.time() - 30 * 86400
    os.utime(old, (month_ago, month_ago))
    return expected, {DEEP_NEIGHBOUR: 501, OLD_FILE_KEY: 700}, str(colon.relative_to(landing))


@pytest.mark.reliability
def test_inputs_that_stopped_the_stream_end_as_rows_or_dead_letters(tmp_path: Path) -> None:
    home = tmp_path / "home"
    landing, lake = home / "landing", home / "lake"
    env = cli_env(home)
    sim = run(["simulate", "--scale", "0.002", "--changes", "200", "--seed", "13", "--quiet"], env)
    assert sim.returncode == 0, sim.stderr
    first = run(["ingest", "--once", "--no-sync", "--quiet"], env, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    expected_dead, fresh, colon_file = plant(landing)
    second = run(["ingest", "--once", "--no-sync", "--quiet"], env, timeout=900)
    oracle = load_oracle(str(landing))
    sale_rows = hudi_rows(lake / "bronze" / "sale")
    planted = [r for r in sale_rows if r["salesid"] >= 9_200_000]
    comparisons = [c if c.table != "sale" else compare_table(
        "sale", oracle.events("sale"), [r for r in sale_rows if r["salesid"] < 9_200_000])
        for c in compare_lake(lake, landing) if c.table != "dead_letter"]
    dead = hudi_rows(lake / "bronze" / "dead_letter")
    actual_dead = Counter((r["topic"], r["kafka_partition"], r["kafka_offset"], r["reason"]) for r in dead
                          if r["kafka_partition"] == PARTITION and r["topic"] == TOPIC)
    colon_dead = [r for r in dead if r["landing_file"] == colon_file]
    got_fresh = sorted((r["salesid"], r["_cdc_kafka_offset"]) for r in planted)
    lost = sum(c.lost for c in comparisons) + sum((expected_dead - actual_dead).values())
    lost += len(set(fresh.items()) - set(got_fresh)) + max(0, 2 - len(colon_dead))
    duplicated = sum(c.duplicated for c in comparisons) + sum((actual_dead - expected_dead).values())
    duplicated += len(got_fresh) - len(set(got_fresh)) + len(set(got_fresh) - set(fresh.items()))
    errors = (second.returncode != 0) + sum(c.mismatched for c in comparisons)
    record(SCENARIO, trials=1, events=sum(c.expected for c in comparisons) + sum(expected_dead.values()) + 4,
           lost=lost, duplicated=duplicated, errors=errors,
           note="990-deep line, colon file name, 4 bad added names, 30-day-old file, gzip bomb, 1.1 GiB file")
    assert second.returncode == 0, second.stderr[-3000:]
    assert got_fresh == sorted(fresh.items()), got_fresh
    assert actual_dead == expected_dead, (actual_dead, expected_dead)
    assert len(colon_dead) == 2, colon_dead
    details = [e for c in comparisons for e in c.examples]
    assert (lost, duplicated, errors) == (0, 0, 0), "\n".join(details)
