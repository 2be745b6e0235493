"""The ingestion never stops on bad landing files, and what is good in them still arrives exactly once.

A small simulated landing (with the simulator's own injected bad lines) gets extra files
in Kafka partition 9 (the simulator writes partitions 0-2, so offsets never collide):

* an empty file;
* a truncated file: real lines, then the next real line cut short (no newline);
* a file with invalid UTF-8 lines between real lines;
* a file with one huge line (a real event padded to 6 MiB with JSON whitespace) and one
  real event with an added column (schema drift);
* a file of an unknown topic, and a file whose name is not a landing name;
* a "doomed" file of events with keys of their own (``DOOMED_KEYS``) deleted while the stream
  has it listed: its batch finds it gone, so it must be named in exactly one ``file_vanished``
  dead letter (never dropped without a word), and none of its events is in bronze.

Every "real line" is a copy of an event the simulator already landed, so bronze must
still equal the oracle exactly (re-deliveries are stored once), whatever happens to the
doomed file. The huge line and the drifted line carry keys of their own (``FRESH_KEYS``),
so only reading them puts them in bronze: each must be there once, equal to its original
event but for the key, the drifted one with its new column, recorded in
``bronze.schema_change``. Dead letters must be the oracle's plus exactly the planted bad
lines, and the running stream (not only the final ``--once`` run) must have written them.
"""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from ingestion.cdc.parser import BAD_ENCODING, FILE_VANISHED, MALFORMED_JSON, UNKNOWN_TOPIC
from simulator.oracle import event_columns, load_oracle
from tests.reliability.figures import record
from tests.reliability.judge import compare_lake, compare_table, hudi_rows
from tests.reliability.processes import Background, cli_env, run, wait_for

SCENARIO = "bad landing files: stream keeps going"
TOPIC = "tickit.ecomm.sale"
PARTITION = 9
HUGE_BYTES = 6 * 1024 * 1024
#: Keys of the huge line's and the drifted line's events (the simulator's sales keys stay far below).
HUGE_KEY, DRIFTED_KEY = 9_100_001, 9_100_002
FRESH_KEYS = {HUGE_KEY: 300, DRIFTED_KEY: 301}  # key -> its offset in partition 9
#: Keys of the doomed file's events: in no other file, so only that file could have brought them.
DOOMED_KEYS = range(9_100_100, 9_100_112)


def _real_lines(landing: Path, count: int) -> list[bytes]:
    """Distinct valid event lines the simulator landed for TOPIC (no tombstones, no injected bad lines)."""
    oracle = load_oracle(str(landing))
    bad = {(d["file"], d["offset"]) for d in oracle.dead_letters()}
    lines: list[bytes] = []
    for path in sorted((landing / "topics" / TOPIC).rglob("*.json")):
        start = int(path.stem.rsplit("+", 1)[1])
        relative = str(path.relative_to(landing))
        for index, line in enumerate(path.read_bytes().splitlines()):
            if line.strip() != b"null" and (relative, start + index) not in bad:
                lines.append(line)
            if len(lines) == count:
                return lines
    raise AssertionError(f"the simulator landed fewer than {count} usable {TOPIC} lines")


def _landing_file(landing: Path, topic: str, offset: int) -> Path:
    directory = landing / "topics" / topic / f"partition={PARTITION}"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{topic}+{PARTITION}+{offset:010d}.json"


def _with_key(line: bytes, salesid: int, **added: str) -> tuple[dict, int]:
    """The event of a landed envelope line with another salesid (and added columns); its original salesid."""
    event = json.loads(line)
    image = "before" if event.get("op") == "d" else "after"
    original = event[image]["salesid"]
    event[image] = {**event[image], "salesid": salesid, **added}
    return event, original


def plant_bad_files(landing: Path) -> tuple[Counter, Path, set[str], dict[int, int]]:
    """Write the bad files; returns expected dead letters, the doomed file, tolerated files, and the
    original salesid of each of ``FRESH_KEYS``."""
    real = _real_lines(landing, 12)
    expected: Counter = Counter()
    _landing_file(landing, TOPIC, 0).write_bytes(b"")
    truncated = real[3]
    cut = next(i for i in range(len(truncated) // 2, 0, -1) if truncated[i] < 0x80)
    _landing_file(landing, TOPIC, 100).write_bytes(b"\n".join(real[:3]) + b"\n" + truncated[:cut])
    expected[(TOPIC, PARTITION, 103, MALFORMED_JSON)] += 1
    bad_utf8 = [real[4], b"\xff\xfe not utf-8 \x80", real[5], b'{"op":"c","after":{"salesid":"\xc3\x28"}}']
    _landing_file(landing, TOPIC, 200).write_bytes(b"\n".join(bad_utf8) + b"\n")
    expected[(TOPIC, PARTITION, 201, BAD_ENCODING)] += 1
    expected[(TOPIC, PARTITION, 203, BAD_ENCODING)] += 1
    drifted, drifted_original = _with_key(real[6], DRIFTED_KEY, loyalty_tier="gold")
    huge_event, huge_original = _with_key(real[7], HUGE_KEY)
    huge = json.dumps(huge_event).encode()[:-1] + b" " * HUGE_BYTES + b"}"
    _landing_file(landing, TOPIC, 300).write_bytes(huge + b"\n" + json.dumps(drifted).encode() + b"\n")
    unknown = "tickit.ecomm.coupon"
    _landing_file(landing, unknown, 0).write_bytes(real[8] + b"\n" + real[9] + b"\n")
    expected[(unknown, PARTITION, 0, UNKNOWN_TOPIC)] += 1
    expected[(unknown, PARTITION, 1, UNKNOWN_TOPIC)] += 1
    odd = landing / "topics" / TOPIC / f"partition={PARTITION}" / "notes-from-operator.json"
    odd.write_bytes(real[10] + b"\n")
    time.sleep(1.1)  # the doomed file is the newest: listed, then read in a later micro-batch
    doomed = _landing_file(landing, TOPIC, 400)
    doomed.write_bytes(b"".join(json.dumps(_with_key(line, key)[0]).encode() + b"\n"
                                for line, key in zip(real[:12], DOOMED_KEYS, strict=True)))
    expected[(TOPIC, PARTITION, 400, FILE_VANISHED)] += 1  # deleted once listed: its batch names it
    return expected, doomed, {str(odd.relative_to(landing))}, {HUGE_KEY: huge_original, DRIFTED_KEY: drifted_original}


def _planned(home: Path, name: str) -> bool:
    """True once a micro-batch has planned ``name`` (the file source's batch log, compacted or not)."""
    for entry in home.glob("checkpoints/*/query/sources/0/*"):
        if entry.name.split(".")[0].isdigit():
            with contextlib.suppress(OSError):
                if name in entry.read_text(errors="replace"):
                    return True
    return False


def _batches(home: Path, kind: str) -> int:
    return sum(1 for p in home.glob(f"checkpoints/*/query/{kind}/*") if p.name.isdigit())


def _settled(home: Path, quiet_seconds: float, timeout: float, ingest: Background) -> bool:
    """Wait until every started micro-batch completed and none started for ``quiet_seconds``; whether
    that happened."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline and ingest.running():
        started, done = _batches(home, "offsets"), _batches(home, "commits")
        if started != last or done != started:
            last, since = started, time.monotonic()
        elif time.monotonic() - since >= quiet_seconds:
            return True
        time.sleep(0.5)
    return False


@pytest.mark.reliability
def test_bad_landing_files_never_stop_the_stream(tmp_path: Path) -> None:
    home = tmp_path / "home"
    landing, lake = home / "landing", home / "lake"
    env = cli_env(home)
    sim = run(["simulate", "--scale", "0.002", "--changes", "200", "--inject-bad", "12", "--seed", "11",
               "--quiet"], env)
    assert sim.returncode == 0, sim.stderr
    planted_dead, doomed, tolerated, originals = plant_bad_files(landing)
    # One file per micro-batch: the first listing sees every file (the doomed one newest), and
    # the doomed file is deleted once that listing happened but long before its batch reads it.
    ingest = Background(["ingest", "--trigger", "1", "--no-sync", "--quiet", "--max-files-per-trigger", "1"],
                        env, tmp_path / "ingest.log")
    errors = 0
    try:
        started = wait_for(lambda: _batches(home, "offsets") > 0 or not ingest.running(), timeout=600,
                           interval=0.05)
        deleted_while_listed = started and ingest.running() and not _planned(home, doomed.name)
        doomed.unlink()
        settled = _settled(home, quiet_seconds=15, timeout=900, ingest=ingest)
        if not ingest.running():  # it must only ever stop because we stop it
            errors += 1
        # what the running stream wrote, before the final run could do its work
        streamed_dead = Counter((r["topic"], r["kafka_partition"], r["kafka_offset"], r["reason"])
                                for r in hudi_rows(lake / "bronze" / "dead_letter"))
    finally:
        returncode = ingest.stop(signal.SIGINT)
    final = run(["ingest", "--once", "--no-sync", "--quiet"], env, timeout=900)
    errors += final.returncode != 0
    oracle = load_oracle(str(landing))
    sale_rows = hudi_rows(lake / "bronze" / "sale")
    planted_rows = [r for r in sale_rows if r["salesid"] in FRESH_KEYS]
    doomed_rows = [r for r in sale_rows if r["salesid"] in DOOMED_KEYS]
    comparisons = [c if c.table != "sale" else compare_table(
        "sale", oracle.events("sale"), [r for r in sale_rows if r["salesid"] not in (*FRESH_KEYS, *DOOMED_KEYS)])
        for c in compare_lake(lake, landing)]
    tables = [c for c in comparisons if c.table != "dead_letter"]
    oracle_dead = Counter((d["topic"], d["partition"], d["offset"], d["reason"])
                          for d in oracle.dead_letters())
    actual_dead = Counter((r["topic"], r["kafka_partition"], r["kafka_offset"], r["reason"])
                          for r in hudi_rows(lake / "bronze" / "dead_letter") if r["landing_file"] not in tolerated)
    expected_dead = oracle_dead + planted_dead
    lost = sum(c.lost for c in tables) + sum((expected_dead - actual_dead).values())
    duplicated = sum(c.duplicated for c in tables) + sum((actual_dead - expected_dead).values())
    mismatched = sum(c.mismatched for c in tables)
    record(SCENARIO, trials=1, events=sum(c.expected for c in tables) + sum(expected_dead.values()), lost=lost,
           duplicated=duplicated, errors=errors + mismatched,
           note=f"7 bad files; doomed file deleted while listed: {'yes' if deleted_while_listed else 'no'}")
    log = (tmp_path / "ingest.log").read_text(errors="replace")
    assert errors == 0, f"stream stopped (exit {returncode}) or the final run failed:\n{log[-3000:]}\n" + (
        final.stderr[-2000:]
    )
    details = [e for c in comparisons for e in c.examples]
    details += [f"dead letters missing: {expected_dead - actual_dead}", f"unexpected: {actual_dead - expected_dead}"]
    assert (lost, duplicated, mismatched) == (0, 0, 0), "\n".join(details)
    # the faults landed: the stream started, the doomed file went while listed, the stream went quiet
    assert started and deleted_while_listed and settled, (started, deleted_while_listed, settled)
    assert planted_dead <= streamed_dead, planted_dead - streamed_dead  # written by the stream itself
    vanished = [r["landing_file"] for r in hudi_rows(lake / "bronze" / "dead_letter") if r["reason"] == FILE_VANISHED]
    assert vanished == [str(doomed.relative_to(landing))], vanished
    assert doomed_rows == []  # its events went with it: reported by the dead letter above, not read
    # the huge and drifted lines were read: each is in bronze once, as its original but for the key
    assert sorted((r["salesid"], r["_cdc_kafka_partition"], r["_cdc_kafka_offset"]) for r in planted_rows) == [
        (key, PARTITION, offset) for key, offset in sorted(FRESH_KEYS.items())]
    columns = [c for c, _ in event_columns("sale") if c != "salesid"]
    for row in planted_rows:
        [original] = [r for r in sale_rows if r["salesid"] == originals[row["salesid"]]
                      and r["_cdc_position"] == row["_cdc_position"]]
        assert {c: row[c] for c in columns} == {c: original[c] for c in columns}, row["salesid"]
    assert {r["salesid"]: r["loyalty_tier"] for r in planted_rows} == {HUGE_KEY: None, DRIFTED_KEY: "gold"}
    changes = [(r["table_name"], r["column_name"], r["change"], r["first_kafka_partition"], r["first_kafka_offset"])
               for r in hudi_rows(lake / "bronze" / "schema_change")]
    assert changes == [("sale", "loyalty_tier", "added", PARTITION, 301)], changes
