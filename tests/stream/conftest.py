"""Fixtures of the ingestion tests: simulated landing zones and in-process ingest runs."""

from __future__ import annotations

import datetime as dt
import io
import json
from dataclasses import dataclass
from pathlib import Path

from ingestion.stream import IngestOptions, IngestSummary, run_ingest
from ingestion.stream.batch import create_empty_table
from simulator.simulation import SimulationOptions, run_simulation
from tests.stream.judge import hudi_commits

START = dt.datetime(2026, 1, 1)


@dataclass
class IngestRun:
    base: Path
    landing: Path
    lake: Path
    database: str
    summary: IngestSummary
    log: str

    def options(self, **overrides) -> IngestOptions:
        return ingest_options(self.base, self.database, **overrides)

    def log_lines(self) -> list[dict]:
        return [json.loads(line) for line in self.log.splitlines() if line.startswith("{")]


def simulate(landing: Path, *, fmt: str, scale: float = 0.01, changes: int = 2000, inject_bad: int = 12,
             seed: int = 7, start: dt.datetime = START, **extra):
    return run_simulation(SimulationOptions(landing=str(landing), scale=scale, changes=changes, format=fmt,
                                            inject_bad=inject_bad, seed=seed, start_time=start, **extra))


def ingest_options(base: Path, database: str, thrift=None, **overrides) -> IngestOptions:
    values = dict(
        landing=str(base / "landing"), lake=str(base / "lake"), checkpoints_root=base / "checkpoints",
        once=True, sync=thrift is not None, database=database,
        thrift_host=thrift.host if thrift else "127.0.0.1", thrift_port=thrift.port if thrift else 1,
    )
    values.update(overrides)
    return IngestOptions(**values)


def ingest(spark, base: Path, database: str, thrift=None, **overrides) -> IngestRun:
    log = io.StringIO()
    summary = run_ingest(ingest_options(base, database, thrift, **overrides), spark=spark, log_stream=log)
    return IngestRun(base, base / "landing", base / "lake", database, summary, log.getvalue())


def cut_first_commit_short(spark, lake: Path, table: str) -> None:
    """Leave ``table`` as a kill between ``hoodie.properties`` and its first completed commit leaves
    it (seen on disk after a SIGKILL on 2026-11-28): created empty by the ingestion's own code,
    then every instant file but the first commit's ``.requested`` removed."""
    create_empty_table(spark, str(lake), table)
    meta = lake / "bronze" / table / ".hoodie"
    for instant in meta.iterdir():
        if instant.is_file() and instant.name.lstrip(".")[:1].isdigit() and ".commit.requested" not in instant.name:
            instant.unlink()
    assert hudi_commits(lake / "bronze" / table) == [] and list(meta.glob("*.commit.requested"))


def land_copy(source: Path, landing: Path, partition: int, offset: int) -> Path:
    """``source``'s lines landed again in ``partition`` at ``offset`` (a connector re-delivery)."""
    topic = source.parent.parent.name
    target = landing / "topics" / topic / f"partition={partition}" / f"{topic}+{partition}+{offset:010d}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes())
    return target
