"""Determinism, resume, reset, S3 through moto, and the CLI."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest

from ingestion.cdc.contracts import load_contracts
from ingestion.cdc.landing import parse_landing_path
from ingestion.object_store import LocalStorage, S3Storage
from lakehouse.cli import main
from simulator.oracle import OracleError, load_oracle
from simulator.simulation import SimulationError, run_simulation
from tests.simulate.conftest import START, small_options
from tests.simulate.replay import replay_landing


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_and_start_time_give_byte_identical_output(tmp_path, mixed_landing):
    """Same options in another process (other hash seed, through the CLI) -> the same bytes."""
    again = tmp_path / "again"
    flags = ["--scale", "0.004", "--changes", "600", "--seed", "11", "--format", "mixed", "--flush-size", "400",
             "--start-time", START.isoformat() + "Z", "--rotate-interval-ms", "5000", "--inject-bad", "16",
             "--truncate", "--quiet"]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    command = [str(Path(sys.executable).with_name("lakehouse")), "simulate", "--landing", str(again), *flags]
    subprocess.run(command, check=True, env=env, capture_output=True, timeout=300)
    first, second = _tree(mixed_landing), _tree(again)
    assert first.keys() == second.keys()
    assert first == second
    other = tmp_path / "other-seed"
    run_simulation(small_options(other, seed=12))
    assert _tree(other) != first


def _max_offsets(storage) -> dict[tuple[str, int], int]:
    ends: dict[tuple[str, int], int] = {}
    for path in storage.list("topics/"):
        landing = parse_landing_path(path)
        lines = storage.read(path).count(b"\n")
        key = (landing.topic, landing.partition)
        ends[key] = max(ends.get(key, 0), landing.start_offset + lines)
    return ends


def test_second_run_resumes_and_the_oracle_covers_both(tmp_path):
    landing = tmp_path / "landing"
    storage = LocalStorage(landing)
    first = run_simulation(small_options(landing, changes=300, inject_bad=8))
    offsets_after_first = _max_offsets(storage)
    first_events = {t: load_oracle(landing).events(t) for t in load_contracts()}
    second = run_simulation(small_options(landing, changes=300, inject_bad=8, start_time=None))
    assert (first.run, second.run) == (1, 2)
    assert second.snapshot_events == 0 and second.change_events == 300 + 12  # + truncate and reload
    oracle = load_oracle(landing)
    assert [r["run"] for r in oracle.runs] == [1, 2]
    # offsets continue: run 2's files start where run 1's ended
    new_files = [parse_landing_path(p) for p in storage.list("topics/")]
    for key, end in offsets_after_first.items():
        starts = sorted(f.start_offset for f in new_files if (f.topic, f.partition) == key)
        assert end in starts or end == _max_offsets(storage)[key]
    # the oracle covers both runs, and still equals the replay of everything that landed
    replayed = replay_landing(storage)
    for table in oracle.tables:
        pk = load_contracts()[table].primary_key
        events = oracle.events(table)
        assert len(events) > len(first_events[table]) or table in ("category", "venue", "date")
        assert {tuple(e[k] for k in pk) + (e["_cdc_position"],): e for e in events} == dict(replayed.events[table])
        live = {tuple(r[k] for k in pk): r for r in oracle.live_rows(table)}
        assert live == replayed.live_rows(table)
    assert len(oracle.dead_letters()) == 16 and oracle.tombstones == replayed.tombstones
    # keys and positions continue: run 2 inserts new keys and its changes sort after run 1's
    sales_first = {e["salesid"] for e in first_events["sale"]}
    run2_sales = [e for e in oracle.events("sale") if e not in first_events["sale"]]
    inserted = {e["salesid"] for e in run2_sales if e["_cdc_op"] == "c"} - sales_first
    assert inserted and min(inserted) > max(sales_first)
    assert min(e["_cdc_position"] for e in run2_sales) > max(e["_cdc_position"] for e in first_events["sale"])
    assert min(e["_cdc_source_ts"] for e in run2_sales) > max(e["_cdc_source_ts"] for e in first_events["sale"])


def test_reset_starts_over_and_bad_resume_inputs_are_refused(tmp_path):
    landing = tmp_path / "landing"
    run_simulation(small_options(landing, changes=50, inject_bad=0, truncate=False))
    with pytest.raises(SimulationError, match="is not after the previous run"):
        run_simulation(small_options(landing, changes=50, start_time=START))
    run_simulation(small_options(landing, changes=50, inject_bad=0, truncate=False, reset=True))
    assert [r["run"] for r in load_oracle(landing).runs] == [1]
    foreign = tmp_path / "foreign"
    (foreign / "topics" / "x").mkdir(parents=True)
    (foreign / "topics" / "x" / "x+0+0000000000.json").write_text("{}\n")
    with pytest.raises(SimulationError, match="no simulator oracle"):
        run_simulation(small_options(foreign))
    with pytest.raises(OracleError, match="no simulator oracle"):
        load_oracle(tmp_path / "empty")


def test_s3_landing_through_moto_equals_the_local_landing(moto_endpoint, mixed_landing):
    boto3.client("s3", endpoint_url=moto_endpoint).create_bucket(Bucket="landing-bucket")
    uri = "s3://landing-bucket/cdc/landing"
    run_simulation(small_options(uri, endpoint_url=moto_endpoint))
    storage = S3Storage(uri, endpoint_url=moto_endpoint)
    local = _tree(mixed_landing)
    remote = {path: storage.read(path) for path in storage.list("")}
    assert remote == local
    oracle = load_oracle(uri, endpoint_url=moto_endpoint)
    replayed = replay_landing(storage)
    assert oracle.tombstones == replayed.tombstones
    pk = load_contracts()["sale"].primary_key
    assert {tuple(r[k] for k in pk): r for r in oracle.live_rows("sale")} == replayed.live_rows("sale")


def test_cli_runs_and_reports_bad_input(tmp_path, capsys):
    landing = tmp_path / "cli"
    args = ["--start-time", "2026-02-01T00:00:00Z", "--format", "flattened", "--partitioner", "daily"]
    code = main(["simulate", "--landing", str(landing), "--scale", "0.002", "--changes", "40", "--quiet", *args])
    assert code == 0
    assert "run 1 ->" in capsys.readouterr().out
    files = LocalStorage(landing).list("topics/")
    assert files and all("/year=2026/month=02/day=01/" in f for f in files)
    assert main(["simulate", "--landing", str(landing), "--scale", "-1", "--quiet"]) == 1
    assert "--scale must be > 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--start-time", "yesterday"])
    assert exit_info.value.code == 2


@pytest.mark.slow
def test_full_scale_run_is_fast_and_matches_the_replay(tmp_path):
    landing = tmp_path / "full"
    cpu_started = time.process_time()
    summary = run_simulation(
        small_options(
            landing,
            scale=1.0,
            changes=20_000,
            flush_size=10_000,
            rotate_interval_ms=60_000,
            start_time=dt.datetime(2026, 1, 1),
        )  # fmt: skip
    )
    assert 420_000 < summary.snapshot_events < 430_000
    # CPU seconds, not wall time: the shared test machine may be busy with other work
    assert time.process_time() - cpu_started < 45, summary.seconds
    oracle = load_oracle(landing)
    replayed = replay_landing(LocalStorage(landing))
    for table in oracle.tables:
        pk = load_contracts()[table].primary_key
        assert {tuple(r[k] for k in pk): r for r in oracle.live_rows(table)} == replayed.live_rows(table)


def test_continuous_mode_streams_on_the_wall_clock_and_commits_the_oracle(tmp_path):
    landing = tmp_path / "stream"
    summary = run_simulation(small_options(landing, rate=150, duration=2.5, inject_bad=0, start_time=None))
    assert summary.snapshot_events > 0 and 100 <= summary.change_events <= 150 * 2.5 + 20
    oracle = load_oracle(landing)
    replayed = replay_landing(LocalStorage(landing))
    for table in oracle.tables:
        pk = load_contracts()[table].primary_key
        assert {tuple(r[k] for k in pk): r for r in oracle.live_rows(table)} == replayed.live_rows(table)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    newest = max(e["_cdc_source_ts"] for e in oracle.events("sale"))
    assert now - dt.timedelta(minutes=1) < newest <= now


def test_resume_removes_files_an_interrupted_run_left_beyond_the_oracle(tmp_path):
    landing = tmp_path / "landing"
    run_simulation(small_options(landing, changes=50, inject_bad=0, truncate=False))
    storage = LocalStorage(landing)
    end = _max_offsets(storage)[("tickit.ecomm.sale", 0)]
    orphan = f"topics/tickit.ecomm.sale/partition=0/tickit.ecomm.sale+0+{end + 5:010d}.json"
    storage.write(orphan, b'{"half": "written"}\n')  # as if the simulator died before committing its oracle
    run_simulation(small_options(landing, changes=50, inject_bad=0, truncate=False, start_time=None))
    assert storage.read(orphan) is None or storage.read(orphan) != b'{"half": "written"}\n'
    replayed = replay_landing(storage)
    assert not replayed.dead_letters
    oracle = load_oracle(landing)
    pk = load_contracts()["sale"].primary_key
    assert {tuple(r[k] for k in pk): r for r in oracle.live_rows("sale")} == replayed.live_rows("sale")
