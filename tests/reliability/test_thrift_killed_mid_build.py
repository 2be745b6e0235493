"""The Thrift server is SIGKILLed in the middle of ``lakehouse dbt build``.

The build must fail (not hang) with an error that names the connection problem; after
``lakehouse thrift start`` the rerun must succeed and every silver relation must equal
the simulator's oracle of live rows (compared row by row through the Thrift server).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

import pytest

from ingestion.cdc.contracts import load_contracts
from simulator.oracle import load_oracle
from tests.dbt_project.silver_oracle import oracle_rows, silver_rows
from tests.reliability.figures import record
from tests.reliability.processes import Background, cli_env, run, wait_for

SCENARIO = "thrift killed mid dbt build"
SCHEMAS = ("bronze", "staging", "silver", "gold", "seeds", "snapshots")
#: Phrases only a lost connection produces (dbt-spark / PyHive / thrift wording); not dbt's generic
#: "Database Error" prefix, which any failing statement gets.
CLEAR_ERROR = re.compile(r"(?i)(could not connect|connection refused|TTransportException|"
                         r"failed to connect|broken pipe|connection reset|unable to connect)")


def _models_done(log: Path) -> int:
    text = log.read_text(errors="replace") if log.exists() else ""
    return len(re.findall(r"\bOK (created|loaded|snapshotted|inserted)", text))


@pytest.mark.reliability
def test_build_fails_clearly_then_recovers_after_restart(own_thrift_server, tmp_path: Path) -> None:
    server = own_thrift_server
    for schema in SCHEMAS:
        server.sql(f"drop schema if exists {schema} cascade")
    home = tmp_path / "home"
    env = cli_env(home, server.port)
    env.update(DBT_TARGET_PATH=str(tmp_path / "target"), DBT_LOG_PATH=str(tmp_path / "dbt-logs"))
    server_env = {**env, **server.env}  # `lakehouse thrift start` of the same home and port
    sim = run(["simulate", "--scale", "0.005", "--changes", "400", "--seed", "21", "--quiet"], env)
    assert sim.returncode == 0, sim.stderr
    ingest = run(["ingest", "--once", "--quiet"], env, timeout=900)
    assert ingest.returncode == 0, ingest.stderr[-3000:]

    build_log = tmp_path / "build-1.log"
    build = Background(["dbt", "build"], env, build_log)
    errors = 0
    try:
        assert wait_for(lambda: _models_done(build_log) >= 2 or not build.running(), timeout=900), (
            "dbt build made no progress"
        )
        assert build.running(), "dbt build finished before the kill:\n" + build.output()[-3000:]
        pid = server.pid()
        assert pid is not None
        killed_at = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        returncode = build.wait(timeout=600)
        fail_seconds = time.monotonic() - killed_at
    finally:
        if build.running():
            build.kill()
    output = build_log.read_text(errors="replace")
    clear = bool(CLEAR_ERROR.search(output))
    errors += (returncode == 0) + (not clear)

    restart = run(["thrift", "start"], server_env, timeout=900)
    errors += restart.returncode != 0
    rerun = run(["dbt", "build"], env, timeout=1800)
    errors += rerun.returncode != 0

    oracle = load_oracle(str(home / "landing"))
    compared = lost = duplicated = changed = 0
    problems: list[str] = []
    for table, contract in load_contracts().items():
        live = {tuple(row[k] for k in contract.primary_key): row for row in oracle.live_rows(table)}
        expected = oracle_rows(live, table)
        try:
            actual = silver_rows(server.host, server.port, table)
        except AssertionError as exc:  # a duplicated key in silver
            duplicated += 1
            problems.append(str(exc))
            continue
        compared += len(expected)
        lost += len(set(expected) - set(actual))
        duplicated += len(set(actual) - set(expected))
        changed += sum(1 for k in set(actual) & set(expected) if actual[k] != expected[k])
    record(SCENARIO, trials=1, events=compared, lost=lost, duplicated=duplicated, errors=errors + changed,
           note=f"build failed in {fail_seconds:.0f}s (exit {returncode}); rerun exit {rerun.returncode}")
    assert returncode != 0, "dbt build succeeded although its Thrift server was killed"
    assert clear, "no clear connection error in the build output:\n" + output[-3000:]
    assert restart.returncode == 0, restart.stderr[-3000:]
    assert rerun.returncode == 0, rerun.stdout[-4000:] + rerun.stderr[-2000:]
    assert (lost, duplicated, changed) == (0, 0, 0), problems
