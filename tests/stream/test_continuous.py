"""Continuous mode: files landed while the stream runs reach bronze and, at once, the registered tables."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest

from ingestion.stream import run_ingest
from tests.stream.conftest import ingest_options, simulate
from tests.stream.judge import compare_events, hudi_rows

DATABASE = "bronze_continuous"


def _wait_until_exact(lake, landing, timeout: float) -> dict:
    """Poll hudi-rs reads of bronze until they equal the oracle. The stream writes meanwhile, so
    a read can meet a table or commit file half written (hudi-rs then raises): that poll counts
    as not there yet, and the last such error is reported if bronze never gets there."""
    deadline = time.monotonic() + timeout
    report: dict = {}
    read_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            report = compare_events(lake, landing)
        except Exception as exc:  # noqa: BLE001 - hudi-rs's error type is not importable
            read_error = exc
            time.sleep(2)
            continue
        if all(actual == expected and not mismatches for expected, actual, mismatches in report.values()):
            return report
        time.sleep(2)
    raise AssertionError(f"bronze did not reach the oracle in {timeout}s: {report} (last read error: {read_error})")


@pytest.mark.slow  # ~5 minutes on a loaded 2-core machine
def test_continuous_mode_picks_up_new_files(tmp_path, spark, thrift_server) -> None:
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    simulate(landing, fmt="flattened", changes=300, inject_bad=0)
    options = ingest_options(tmp_path, DATABASE, thrift_server, once=False, trigger_seconds=1.0)
    stop = threading.Event()
    errors: list[BaseException] = []
    reports = []

    def runner() -> None:
        try:
            run_ingest(options, spark=spark, log_stream=None, stop_event=stop, on_report=reports.append)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=runner, daemon=True)
    thread.start()
    try:
        _wait_until_exact(lake, landing, timeout=600)
        batches_before = len(reports)
        # a second simulator run lands more files (and extends the oracle) while the stream runs
        simulate(landing, fmt="flattened", changes=400, inject_bad=0, start=dt.datetime(2026, 1, 2))
        _wait_until_exact(lake, landing, timeout=600)
        assert len(reports) > batches_before
        expected = len(hudi_rows(lake / "bronze" / "sale"))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            got = int(thrift_server.sql(f"SELECT count(*) FROM {DATABASE}.sale")[0][0])
            if got == expected:
                break
            time.sleep(1)
        assert got == expected
    finally:
        stop.set()
        thread.join(timeout=120)
    assert not errors, errors
