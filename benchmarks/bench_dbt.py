"""Benchmark of the dbt project on the embedded default (managed Thrift server, Apache Hudi tables).

Builds its own lakehouse instance in a temporary LAKEHOUSE_HOME on a free port:
simulate (scale S) -> ingest -> dbt, then prints medians of several runs:
  - `dbt build --full-refresh` (every model, seed, snapshot and test) at scale S
    (goal at scale 1.0 on 2 cores: <= 120 s);
  - the silver and gold models (`--select`, default `tag:silver tag:gold`) run
    incrementally after ~1% changes (simulated + ingested), --runs times in a row as
    scheduled runs do, narrowed as the `hourly` job narrows its build (the changed bronze
    tables' lineage; a view only where its definition or a source's columns changed;
    `--rebuild-views`: every view re-created, as before 2026-11-29; table services that run
    every Nth commit, such as cleaning or a merge-on-read table's compaction, fall inside the
    measured runs), as a ratio to a full refresh of the same models (--full-runs, afterwards)
    (goal at scale 10: <= 0.35, stretch 0.25);
  - the same after a fixed number of changes (--fixed-changes, default 1,000; --fixed-runs times):
    run the bench at scales 1, 4 and 10 for the slope (goal: scale 10 <= 1.3x scale 1);
  - rows written per incremental run by every silver and gold Hudi table, from Hudi's commit
    metadata (inserts + updates + deletes), per changed row, with the compaction of the
    merge-on-read tables (timed once after the runs, amortised over its interval of delta
    commits) counted (goal: <= 10x the changed rows);
  - the `hourly` job (`lakehouse jobs run hourly`: ingest, then the build of silver and gold
    narrowed to the bronze tables with new commits) with nothing new landed, --idle-runs
    times, alternating with its build step as written (the same dbt command unnarrowed: what
    the job ran before), whole job and dbt step (goal at scale 10: <= 30 s whole, <= 15 s dbt);
  - correctness and read cost: after the incremental runs, every silver and gold relation is
    copied into parquet twice, before and after the compaction (the time of each copy is a
    whole read: for a view, what a reader pays since a run writes nothing for it; before the
    compaction, with the runs' log files unmerged), and the second copy is compared with the
    first full refresh (`except all`, both ways); a difference stops the bench with exit code 1.

Each dbt command runs the way the project runs it (`lakehouse dbt`, jobs, demo): the `dbt`
executable of the project's environment.

Before the measured runs, --warmup cycles (change, ingest, incremental) run untimed: the
full-refresh statements have already run in the builds, the incremental ones not, and a
server that has never run a statement plans and JIT-compiles it more slowly (a long-lived
server running scheduled jobs has run both many times).

    .venv/bin/python benchmarks/bench_dbt.py [--scale 1.0] [--runs 5] [--full-runs 3] [--warmup 1]
                                             [--change-pct 1.0] [--fixed-changes 1000] [--fixed-runs 3]
                                             [--threads 4] [--select "tag:silver tag:gold"]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hudi import HudiTableBuilder
from rich.console import Console
from rich.table import Table

from lakehouse.config import load_settings
from lakehouse.jobs.changes import BuiltRecord, bronze_built, bronze_sources, narrow
from lakehouse.services import thrift
from lakehouse.services.ports import free_port
from simulator.oracle import load_oracle

PROJECT_DIR = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
console = Console()


class Instance:
    """One isolated lakehouse (home, landing, lake, Thrift server) and the commands run against it."""

    def __init__(self, home: Path, port: int, threads: int):
        self.home, self.threads = home, threads
        self.settings = dataclasses.replace(
            load_settings(), home=home, landing=str(home / "landing"), lake=str(home / "lake"),
            thrift_host="127.0.0.1", thrift_port=port,
        )
        self.env = {
            **os.environ,
            "LAKEHOUSE_HOME": str(home), "LAKEHOUSE_LANDING": self.settings.landing,
            "LAKEHOUSE_LAKE": self.settings.lake, "LAKEHOUSE_THRIFT_HOST": "127.0.0.1",
            "LAKEHOUSE_THRIFT_PORT": str(port), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        }
        self.env.pop("DBT_PROFILES_DIR", None)
        self.env.pop("LAKEHOUSE_DBT_TARGET", None)
        self.built = BuiltRecord(home / "bench-job", 1, self.settings.lake)

    def run(self, command: list[str], what: str) -> float:
        """Run a command; seconds it took. Raises with the output's tail when it fails."""
        started = time.perf_counter()
        result = subprocess.run(command, cwd=PROJECT_DIR, env=self.env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if result.returncode != 0:
            lines = (result.stdout + result.stderr).splitlines()
            errors = [line for line in lines if " ERROR " in line or "Error" in line][:40]
            tail = "\n".join([*errors, "...", *lines[-30:]])
            raise SystemExit(f"{what} failed (exit {result.returncode}):\n{tail}")
        return elapsed

    def warehouse(self) -> Path:
        """Where the Thrift server's tables (silver, gold) live."""
        return Path(self.settings.warehouse.replace("file:", "", 1))

    def lakehouse(self, *args: str, what: str) -> float:
        return self.run([str(BIN / "lakehouse"), *args], what)

    def dbt_elapsed(self) -> float:
        """dbt's own elapsed time of the last command (its node work, without process start-up and parsing)."""
        results = json.loads((self.home / "dbt-target" / "run_results.json").read_text())
        return float(results["elapsed_time"])

    def node_seconds(self) -> dict[str, float]:
        """Seconds of each node of the last command (dbt's execution_time), by node name."""
        return {r["unique_id"].split(".")[-1]: float(r["execution_time"]) for r in self.node_results()}

    def node_results(self) -> list[dict]:
        """The last command's node results as dbt wrote them (unique_id, execution_time, timing)."""
        return json.loads((self.home / "dbt-target" / "run_results.json").read_text())["results"]

    def record_built(self) -> None:
        """Record the bronze instants and the dbt manifest of the build that just ran, as the
        ``hourly`` job records its build step's success."""
        built = bronze_built(self.settings.lake, sorted(bronze_sources(PROJECT_DIR)))
        self.built.save(built, self.home / "dbt-target" / "manifest.json")

    def scheduled_run(self, selection: list[str], narrowed: bool) -> float:
        """``dbt run`` of the selection as the ``hourly`` job narrows its build (the changed bronze
        tables' lineage, views only where their definition or a source's columns changed:
        lakehouse/jobs/changes.py); the selection as written when not ``narrowed``."""
        args = ["run", "--select", *selection]
        narrowing = narrow(args, self.settings.lake, bronze_sources(PROJECT_DIR), self.built.load(),
                           self.built.state())
        if narrowing is None:
            raise SystemExit("no bronze table has a new commit: the changes did not land")
        elapsed = self.dbt(*(narrowing.args if narrowed else args))
        self.built.save(narrowing.built, self.home / "dbt-target" / "manifest.json")
        return elapsed

    def dbt(self, *args: str) -> float:
        return self.run([str(BIN / "dbt"), *args, "--project-dir", str(PROJECT_DIR),
                         "--profiles-dir", str(PROJECT_DIR / "profiles"), "--threads", str(self.threads),
                         "--target-path", str(self.home / "dbt-target"),
                         "--log-path", str(self.home / "dbt-logs")], f"dbt {' '.join(args)}")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="simulator scale (1.0 = full TICKIT)")
    parser.add_argument("--runs", type=int, default=5,
                        help="incremental runs in a row (their median and mean are printed)")
    parser.add_argument("--full-runs", type=int, default=3, help="full refreshes of the selection, after them")
    parser.add_argument("--change-pct", type=float, default=1.0, help="changes per incremental run, %% of rows")
    parser.add_argument("--fixed-changes", type=int, default=1000,
                        help="changes per run of the fixed-size series (the slope across scales)")
    parser.add_argument("--fixed-runs", type=int, default=3, help="runs of the fixed-size series (0: none)")
    parser.add_argument("--compaction-interval", type=int, default=10,
                        help="delta commits between compactions of the merge-on-read tables (dbt_project.yml)")
    parser.add_argument("--threads", type=int, default=4, help="dbt threads (the profile's default is 4)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed silver cycles before the measured ones")
    parser.add_argument("--build-runs", type=int, default=None,
                        help="runs of the full dbt build (default: --runs; 0 measures the silver ratio only)")
    parser.add_argument("--select", default="tag:silver tag:gold",
                        help="the models of the incremental / full-refresh ratio (dbt selection)")
    parser.add_argument("--rebuild-views", action="store_true",
                        help="incremental runs of the whole selection, every view re-created (before 2026-11-29)")
    parser.add_argument("--idle-runs", type=int, default=3,
                        help="hourly job runs with nothing new landed, each beside its unnarrowed build (0: none)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary LAKEHOUSE_HOME")
    args = parser.parse_args()
    if args.scale <= 0 or args.runs < 1 or args.full_runs < 1 or args.warmup < 0 or not 0 < args.change_pct <= 100:
        parser.error("--scale must be > 0, --runs and --full-runs >= 1, --warmup >= 0, --change-pct in (0, 100]")

    selection = args.select.split()
    home = Path(tempfile.mkdtemp(prefix="bench-dbt-"))
    instance = Instance(home, free_port(), args.threads)
    console.print(f"lakehouse home {home}, Thrift port {instance.settings.thrift_port}")
    try:
        thrift.start(instance.settings, timeout=300)
        simulate_s = instance.lakehouse("simulate", "--scale", str(args.scale), "--quiet", what="simulate")
        ingest_s = instance.lakehouse("ingest", "--once", "--quiet", what="ingest")
        oracle = load_oracle(instance.settings.landing)
        live_rows = sum(len(oracle.live_rows(table)) for table in oracle.tables)
        console.print(f"simulate {simulate_s:.1f} s, ingest {ingest_s:.1f} s, live rows {live_rows}")
        builds, build_work, build_nodes = [], [], []
        build_runs = args.full_runs if args.build_runs is None else args.build_runs
        if build_runs == 0:
            initial = instance.dbt("build", "-s", *[f"+{s}" for s in selection], "--exclude-resource-type", "test")
            console.print(f"dbt build of the selection and its parents (initial): {initial:.1f} s")
        for run in range(build_runs):
            builds.append(instance.dbt("build", "--full-refresh"))
            build_work.append(instance.dbt_elapsed())
            build_nodes.append(instance.node_results())
            shutil.copy(home / "dbt-target" / "run_results.json", home / f"build-{run + 1}-run_results.json")
            console.print(f"dbt build --full-refresh #{run + 1}: {builds[-1]:.1f} s "
                          f"(dbt elapsed {build_work[-1]:.1f} s)")

        instance.record_built()
        changes = max(1, int(live_rows * args.change_pct / 100))
        runs = SilverRuns()
        # the incremental runs follow each other, as scheduled runs do: a table service that runs
        # every Nth commit (cleaning, a merge-on-read compaction) lands in them, and the mean counts it
        for run in range(-args.warmup, args.runs):
            instance.lakehouse("simulate", "--changes", str(changes), "--quiet", what="simulate changes")
            instance.lakehouse("ingest", "--once", "--quiet", what="ingest changes")
            before = written_rows(instance.warehouse())
            incremental_s = instance.scheduled_run(selection, not args.rebuild_views)
            incremental_work = instance.dbt_elapsed()
            if run < 0:
                console.print(f"warm-up: incremental {incremental_s:.1f} s")
                continue
            runs.add_incremental(incremental_s, incremental_work, instance.node_seconds())
            runs.written.append(written_rows(instance.warehouse()) - before)
            console.print(f"incremental #{run + 1}: {incremental_s:.1f} s (dbt elapsed {incremental_work:.1f} s), "
                          f"rows written {runs.written[-1]} for {changes} changes")
        for run in range(args.fixed_runs):
            instance.lakehouse("simulate", "--changes", str(args.fixed_changes), "--quiet", what="simulate changes")
            instance.lakehouse("ingest", "--once", "--quiet", what="ingest changes")
            before = written_rows(instance.warehouse())
            runs.add_fixed(instance.scheduled_run(selection, not args.rebuild_views), instance.node_seconds())
            runs.fixed_written.append(written_rows(instance.warehouse()) - before)
            console.print(f"incremental, {args.fixed_changes} changes #{run + 1}: {runs.fixed[-1]:.1f} s, "
                          f"rows written {runs.fixed_written[-1]}")
        # whole reads with the runs' log files still unmerged, then compacted (the copies compared)
        logged_reads = copy_relations(instance)
        compaction = compact_all(instance)
        reads = copy_relations(instance)
        differences: dict[str, tuple[int, int]] = {}
        for run in range(args.full_runs):
            full_s = instance.dbt("run", "-s", *selection, "--full-refresh")
            runs.add_full(full_s, instance.dbt_elapsed(), instance.node_seconds())
            console.print(f"full refresh #{run + 1}: {full_s:.1f} s (dbt elapsed {runs.full_work[-1]:.1f} s)")
            if run == 0:
                differences = full_refresh_differences(instance, list(reads))

        idle = idle_hourly_runs(instance, args.idle_runs)

        table = Table(title=f"dbt on the embedded default, scale {args.scale}, {os.cpu_count()} cores, "
                            f"{args.threads} dbt threads ({args.runs} incremental runs, "
                            f"{args.full_runs} full refreshes, {args.warmup} warm-up)")
        table.add_column("measure")
        table.add_column("median", justify="right")
        table.add_column("goal", justify="right")
        if builds:
            table.add_row("dbt build --full-refresh", f"{median(builds):.1f} s", "<= 120 s at scale 1.0")
            table.add_row("  of which dbt elapsed (nodes)", f"{median(build_work):.1f} s", "")
        table.add_row(f"dbt run -s {args.select} after {changes} changes (median / mean)",
                      f"{median(runs.incremental):.1f} / {statistics.fmean(runs.incremental):.1f} s", "")
        table.add_row(f"dbt run -s {args.select} --full-refresh", f"{median(runs.full):.1f} s", "")
        table.add_row("incremental / full refresh (medians)", f"{median(runs.incremental) / median(runs.full):.2f}",
                      "<= 0.25 at scale 10")
        table.add_row("  same, mean of the incremental runs (periodic table services included)",
                      f"{statistics.fmean(runs.incremental) / median(runs.full):.2f}", "")
        table.add_row("  same, dbt elapsed only (medians)",
                      f"{median(runs.incremental_work) / median(runs.full_work):.2f}", "")
        interval = args.compaction_interval
        amortised = median(runs.incremental) + compaction.seconds / interval
        table.add_row(f"compaction of the merge-on-read tables ({', '.join(compaction.tables)})",
                      f"{compaction.seconds:.1f} s", f"every {interval} runs")
        table.add_row("incremental + compaction / interval, over full refresh",
                      f"{amortised / median(runs.full):.2f}", "<= 0.35 at scale 10")
        table.add_row("rows written per incremental run / changes (median, compaction amortised)",
                      f"{(median(runs.written) + compaction.written / interval) / changes:.2f}",
                      "<= 10")
        if runs.fixed:
            table.add_row(f"dbt run -s {args.select} after {args.fixed_changes} changes (median)",
                          f"{median(runs.fixed):.1f} s", "scale 10 <= 1.3x scale 1")
            table.add_row("  rows written / changes (median, compaction amortised)",
                          f"{(median(runs.fixed_written) + compaction.written / interval) / args.fixed_changes:.2f}",
                          "<= 10")
        if idle.whole:
            table.add_row("hourly job, nothing new: whole (ingest + build step)", f"{median(idle.whole):.1f} s",
                          "<= 30 s at scale 10")
            table.add_row("  its build step (skipped: no new bronze commit)", f"{median(idle.step):.1f} s",
                          "<= 15 s at scale 10")
            table.add_row("  the build step as written, nothing new (before: not narrowed)",
                          f"{median(idle.unnarrowed):.1f} s", "")
            table.add_row("  build step / as written (medians)", f"{median(idle.step) / median(idle.unnarrowed):.2f}",
                          "")
        console.print(table)
        if build_nodes:
            console.print(build_breakdown(build_nodes[-1]))
        console.print(runs.node_table())
        console.print(read_table(reads, logged_reads))
        if differences:
            raise SystemExit(f"incremental result differs from the full refresh (rows only in the incremental "
                             f"result, only in the full refresh): {differences}")
        console.print(f"after the incremental runs, all {len(reads)} silver and gold relations equalled "
                      "their full refresh (except all, both ways)")
    finally:
        thrift.stop(instance.settings)
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)


@dataclasses.dataclass
class IdleRuns:
    """The hourly job with nothing new: whole runs, their build step, and the step's command unnarrowed."""

    whole: list[float] = dataclasses.field(default_factory=list)
    step: list[float] = dataclasses.field(default_factory=list)
    unnarrowed: list[float] = dataclasses.field(default_factory=list)


def idle_hourly_runs(instance: Instance, runs: int) -> IdleRuns:
    """``lakehouse jobs run hourly`` with nothing new landed, alternating with its build step's dbt
    command as written. One untimed run first records the bronze instants the step starts from."""
    idle = IdleRuns()
    if runs <= 0:
        return idle
    instance.lakehouse("jobs", "run", "hourly", what="hourly (recording the bronze instants)")
    build = ["build", "--select", "tag:silver", "tag:gold", "--exclude-resource-type", "unit_test"]
    for _ in range(runs):
        idle.whole.append(instance.lakehouse("jobs", "run", "hourly", what="hourly, nothing new"))
        record = latest_run(instance.home / "jobs" / "hourly")
        step = record["steps"][-1]
        idle.step.append(sum(a["duration_s"] for a in step["attempts"]))
        idle.unnarrowed.append(instance.dbt(*build))
        console.print(f"hourly, nothing new: {idle.whole[-1]:.1f} s whole, build step {step['status']} "
                      f"{idle.step[-1]:.1f} s; the step as written {idle.unnarrowed[-1]:.1f} s")
    return idle


def latest_run(job_dir: Path) -> dict:
    """The newest run record of a job (run ids sort by start time)."""
    newest = max((job_dir / "runs").iterdir(), key=lambda path: path.name)
    return json.loads((newest / "run.json").read_text())


def build_breakdown(results: list[dict], top: int = 15) -> Table:
    """Where the last full build's time went: seconds per resource type (models, tests, seeds,
    snapshots; summed over dbt's threads, so above the elapsed time) and the slowest nodes."""
    table = Table(title="last dbt build --full-refresh: seconds by node kind and slowest nodes "
                        "(summed over threads)")
    for column in ("nodes", "count", "seconds"):
        table.add_column(column, justify="left" if column == "nodes" else "right")
    kinds: dict[str, list[float]] = {}
    for result in results:
        kinds.setdefault(result["unique_id"].split(".")[0], []).append(float(result["execution_time"]))
    for kind, seconds in sorted(kinds.items(), key=lambda item: -sum(item[1])):
        table.add_row(f"all {kind}s", str(len(seconds)), f"{sum(seconds):.1f}")
    for result in sorted(results, key=lambda r: -float(r["execution_time"]))[:top]:
        table.add_row(result["unique_id"].split(".", 2)[-1], "", f"{float(result['execution_time']):.1f}")
    return table


def hudi_tables(warehouse: Path) -> list[Path]:
    """The Hudi tables of the silver and gold schemas."""
    return sorted(path.parent.parent for path in warehouse.glob("*.db/*/.hoodie/hoodie.properties"))


def written_rows(warehouse: Path) -> int:
    """Rows every completed write of every silver and gold Hudi table has written so far (records
    written to files plus deletes, from the commit metadata, compactions included: a compaction
    rewrites its whole table, which its `numWrites` counts and its inserts and updates do not),
    read by hudi-rs. A table dropped and created again (a full refresh) starts again from its new
    timeline."""
    total = 0
    for path in hudi_tables(warehouse):
        timeline = HudiTableBuilder.from_base_uri(str(path)).build().get_timeline()
        for instant in timeline.get_completed_commits() + timeline.get_completed_deltacommits():
            metadata = json.loads(timeline.get_instant_metadata_in_json(instant))
            for stats in metadata.get("partitionToWriteStats", {}).values():
                total += sum(s.get("numWrites", 0) + s.get("numDeletes", 0) for s in stats)
    return total


@dataclasses.dataclass
class Compaction:
    """One compaction of every merge-on-read table: its seconds and the rows it wrote."""

    tables: list[str]
    seconds: float
    written: int


CHECKED_SCHEMAS = ("silver", "gold")
COPY_SCHEMA = "bench_incremental_copy"


def relation_columns(instance: Instance, relation: str) -> list[str]:
    """A relation's columns without Hudi's `_hoodie_*` meta columns, backquoted."""
    rows = thrift.run_sql("127.0.0.1", instance.settings.thrift_port, f"describe {relation}")
    names = [row[0] for row in rows if row[0] and not row[0].startswith(("#", "_hoodie_"))]
    return [f"`{name}`" for name in dict.fromkeys(names)]


def copy_relations(instance: Instance) -> dict[str, float]:
    """Copy every silver and gold relation (tables and views) into parquet tables, the incremental
    result the full refresh is compared with; seconds per relation, a whole read of it (for a view:
    what reading it costs, since a run writes nothing for it)."""
    port = instance.settings.thrift_port
    thrift.run_sql("127.0.0.1", port, f"drop schema if exists {COPY_SCHEMA} cascade")
    thrift.run_sql("127.0.0.1", port, f"create schema {COPY_SCHEMA}")
    seconds = {}
    for schema in CHECKED_SCHEMAS:
        views = {row[1] for row in thrift.run_sql("127.0.0.1", port, f"show views in {schema}")}
        for row in thrift.run_sql("127.0.0.1", port, f"show tables in {schema}"):
            relation = f"{schema}.{row[1]}"
            started = time.perf_counter()
            thrift.run_sql("127.0.0.1", port, f"create table {COPY_SCHEMA}.{schema}__{row[1]} using parquet as "
                                              f"select {', '.join(relation_columns(instance, relation))} "
                                              f"from {relation}")
            seconds[relation + (" (view)" if row[1] in views else "")] = time.perf_counter() - started
    return seconds


def full_refresh_differences(instance: Instance, relations: list[str]) -> dict[str, tuple[int, int]]:
    """Per relation that differs: rows only in its incremental copy, rows only in the full refresh."""
    port = instance.settings.thrift_port
    out = {}
    for name in relations:
        relation = name.removesuffix(" (view)")
        schema, table = relation.split(".")
        columns = ", ".join(relation_columns(instance, relation))
        copy = f"{COPY_SCHEMA}.{schema}__{table}"
        counts = [thrift.run_sql("127.0.0.1", port, f"select count(*) from (select {columns} from {a} "
                                                    f"except all select {columns} from {b})")[0][0]
                  for a, b in ((copy, relation), (relation, copy))]
        if any(counts):
            out[relation] = (counts[0], counts[1])
    thrift.run_sql("127.0.0.1", port, f"drop schema if exists {COPY_SCHEMA} cascade")
    return out


def read_table(reads: dict[str, float], logged_reads: dict[str, float]) -> Table:
    """Seconds to read each silver and gold relation whole after the incremental runs: with their
    log files unmerged (the runs' delta commits) and after the compaction."""
    table = Table(title="reading each relation whole after the incremental runs (a copy into parquet)")
    for column in ("relation", "before compaction", "compacted"):
        table.add_column(column, justify="left" if column == "relation" else "right")
    for relation, seconds in sorted(reads.items(), key=lambda item: -item[1]):
        table.add_row(relation, f"{logged_reads.get(relation, float('nan')):.1f}", f"{seconds:.1f}")
    return table


def compact_all(instance: Instance) -> Compaction:
    """Compact every merge-on-read table of silver and gold now (Hudi's run_compaction procedure),
    timed: the cost the inline compaction pays once per interval of delta commits."""
    warehouse = instance.warehouse()
    tables = []
    for path in hudi_tables(warehouse):
        properties = (path / ".hoodie" / "hoodie.properties").read_text()
        if "hoodie.table.type=MERGE_ON_READ" in properties:
            tables.append(f"{path.parent.name.removesuffix('.db')}.{path.name}")
    before = written_rows(warehouse)
    started = time.perf_counter()
    for table in tables:
        # the procedure applies the table's trigger (every 10th delta commit): without this option
        # it schedules nothing before the 10th, and the bench timed 0.3 s of no work (2026-11-29)
        thrift.run_sql("127.0.0.1", instance.settings.thrift_port,
                       f"call run_compaction(op => 'scheduleandexecute', table => '{table}', "
                       "options => 'hoodie.compact.inline.max.delta.commits=1')")
    seconds = time.perf_counter() - started
    compaction = Compaction(tables, seconds, written_rows(warehouse) - before)
    if tables and compaction.written == 0:
        raise SystemExit(f"compaction of {', '.join(tables)} wrote nothing: the amortised figures would be wrong")
    console.print(f"compaction of {len(tables)} merge-on-read tables: {seconds:.1f} s, "
                  f"rows written {compaction.written}")
    return compaction


@dataclasses.dataclass
class SilverRuns:
    """The measured incremental runs and full refreshes of the selection."""

    incremental: list[float] = dataclasses.field(default_factory=list)
    incremental_work: list[float] = dataclasses.field(default_factory=list)
    full: list[float] = dataclasses.field(default_factory=list)
    full_work: list[float] = dataclasses.field(default_factory=list)
    incremental_nodes: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    full_nodes: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    written: list[int] = dataclasses.field(default_factory=list)
    fixed: list[float] = dataclasses.field(default_factory=list)
    fixed_written: list[int] = dataclasses.field(default_factory=list)
    fixed_nodes: dict[str, list[float]] = dataclasses.field(default_factory=dict)

    def add_incremental(self, seconds: float, work: float, nodes: dict[str, float]) -> None:
        self.incremental.append(seconds)
        self.incremental_work.append(work)
        for name, node_seconds in nodes.items():
            self.incremental_nodes.setdefault(name, []).append(node_seconds)

    def add_fixed(self, seconds: float, nodes: dict[str, float]) -> None:
        self.fixed.append(seconds)
        for name, node_seconds in nodes.items():
            self.fixed_nodes.setdefault(name, []).append(node_seconds)

    def add_full(self, seconds: float, work: float, nodes: dict[str, float]) -> None:
        self.full.append(seconds)
        self.full_work.append(work)
        for name, node_seconds in nodes.items():
            self.full_nodes.setdefault(name, []).append(node_seconds)

    def node_table(self) -> Table:
        """Where the time goes: each model's median seconds, incremental and full refresh (dbt runs
        models in parallel threads, so the sums exceed the elapsed times)."""
        table = Table(title="seconds per model (medians; models run in parallel threads)")
        for column in ("model", "incremental", "fixed changes", "full refresh", "ratio"):
            table.add_column(column, justify="left" if column == "model" else "right")
        names = sorted(self.full_nodes, key=lambda name: -median(self.full_nodes[name]))
        for name in names:
            inc, full = median(self.incremental_nodes.get(name, [])), median(self.full_nodes[name])
            fixed = median(self.fixed_nodes.get(name, []))
            table.add_row(name, f"{inc:.1f}", f"{fixed:.1f}", f"{full:.1f}", f"{inc / full:.2f}" if full else "")
        return table


if __name__ == "__main__":
    main()
