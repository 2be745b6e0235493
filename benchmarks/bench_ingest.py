"""Benchmark of the streaming ingestion (not a timed test): throughput, ratio to plain Spark, freshness.

Prints medians of several runs:

* ``lakehouse ingest --once`` of a simulated landing zone (default scale 1.0, ~425K
  events) in events/s, after JVM start ("warm") and including it ("cold", first run),
  for each parser of ``--parsers`` (``LAKEHOUSE_INGEST_PARSER``: ``fast``, the vectorized
  path, and ``python``, the pure-Python parser it falls back to), in the same JVM;
* the same files through plain Spark ``readStream.json -> writeStream.parquet``
  (availableNow) and the ratio ingest time / plain time;
* with ``--hudi-floor``: the same files through Spark's JSON reader into Hudi ``bulk_insert``
  with the bronze options and no CDC parsing (``hudi_floor``: the floor under any Hudi load,
  a stand-in for HoodieStreamer), and the ratios ingest / floor and floor / plain;
* with ``--avro``: the same events from an Avro landing, and the ratio Avro / JSON landing;
* with ``--kafka``: the same events from Kafka (``ingest --kafka-bootstrap --once``: Spark's
  Kafka source, from the earliest offsets), and the ratio Kafka source / JSON landing. One
  KRaft broker (``lakehouse.services.kafka``, its own home under the work directory, stopped
  by PID at the end) is filled once from the JSON landing (``simulator.kafka_producer``, the
  records in their topics and partitions in offset order) before the timed runs;
* freshness in continuous mode (``--trigger 1``): a file landed -> its event visible in
  ``bronze.sale`` through the Thrift server, p50/p95 (needs a running Thrift server:
  ``lakehouse thrift start``; skipped otherwise).

Runs are interleaved (run 1 of every parser and of plain Spark, then run 2, ...), so a
change of load on a shared machine affects all of them alike; the first run of each is
the cold one and is left out of the warm median.

Usage: ``python benchmarks/bench_ingest.py [--scale 1.0] [--changes 20000] [--runs 3]
[--format envelope] [--parsers fast,python] [--spark-reads] [--serial-writes] [--hudi-floor] [--avro] [--kafka]
[--freshness-samples 20] [--work DIR]``
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from ingestion.cdc.landing import landing_file_name
from ingestion.stream import IngestOptions, run_ingest
from ingestion.stream.fast_parse import PARSER_ENV, PARSER_MODES
from lakehouse.config import load_settings
from lakehouse.services import kafka
from lakehouse.services.ports import free_port
from simulator.kafka_producer import landed_files, produce_landing
from simulator.simulation import SimulationOptions, run_simulation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hudi_floor import floor_tables, spark_json_to_hudi  # noqa: E402 - benchmarks/ is not a package
from plain_spark import landing_schema, plain_spark  # noqa: E402
from process_tree import PeakMemory  # noqa: E402

KAFKA_VARIANT = "fast, Kafka source"


def landed_lines(landing: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in (landing / "topics").rglob("*.json"))


def ingest_once(spark, landing: Path, work: Path, parser: str, spark_reads: bool = False,
                serial_writes: bool = False, kafka_bootstrap: str | None = None,
                topics: tuple[str, ...] | None = None) -> tuple[float, int, str]:
    """One ``ingest --once`` into a fresh lake with ``parser`` (the driver reads the variable per batch).

    ``spark_reads``: the landed files go through Spark's binaryFile reader (content column,
    Spark's default split), as before the parse workers read local files themselves.
    ``serial_writes``: the batch's Hudi writes run one table after another (one writer
    thread) instead of ``WRITE_THREADS`` concurrent Spark jobs.
    ``kafka_bootstrap``: read ``topics`` from this broker instead of the landing zone
    (``ingest --kafka-bootstrap --once``; fresh checkpoints: from the earliest offsets).
    """
    from ingestion.sources import landing as landing_module
    from ingestion.stream import batch as batch_module

    if work.exists():
        shutil.rmtree(work)
    options = IngestOptions(landing=str(landing), lake=str(work / "lake"), checkpoints_root=work / "checkpoints",
                            once=True, sync=False, kafka_bootstrap=kafka_bootstrap, topics=topics,
                            starting_offsets="earliest")
    previous = os.environ.get(PARSER_ENV)
    os.environ[PARSER_ENV] = parser
    reads_in_workers = landing_module.reads_in_workers
    if spark_reads:
        landing_module.reads_in_workers = lambda landing: False
    write_threads = batch_module.WRITE_THREADS
    if serial_writes:
        batch_module.WRITE_THREADS = 1
    try:
        started = time.perf_counter()
        summary = run_ingest(options, spark=spark, log_stream=None)
        elapsed = time.perf_counter() - started
    finally:
        landing_module.reads_in_workers = reads_in_workers
        batch_module.WRITE_THREADS = write_threads
        if previous is None:
            os.environ.pop(PARSER_ENV, None)
        else:
            os.environ[PARSER_ENV] = previous
    shutil.rmtree(work, ignore_errors=True)
    # the tables whose repeated record keys were ranked (``ingestion.stream.repeated_keys``): their
    # re-delivered rows are read twice, the other tables' rows once
    ranked = sorted({table for r in summary.reports for table in r.deduplicated})
    phases = (f"{len(summary.reports)} batch(es): parse+collect {sum(r.parse_seconds for r in summary.reports):.1f}s, "
              f"write {sum(r.write_seconds for r in summary.reports):.1f}s, "
              f"repeated keys in {', '.join(ranked) or 'no table'}")
    return elapsed, sum(summary.events.values()) + summary.bad_events, phases


def start_broker(home: Path) -> kafka.BrokerConfig:
    """One KRaft broker of its own (``home``, a free port on 127.0.0.1), as the tests' ``kafka_broker``.

    The caller stops it by PID (``kafka.stop``) in a ``finally``; a start that fails stops what it
    started (a broker may be running without answering) before raising.
    """
    config = kafka.broker_config(dataclasses.replace(load_settings(), home=home), free_port())
    try:
        try:
            kafka.start(config)
        except kafka.KafkaError as exc:  # e.g. another process took the free port first: once more, on another
            print(f"the benchmark's broker did not start ({exc}); trying another port", flush=True)
            kafka.stop(config)
            config = kafka.broker_config(config.settings, free_port())
            kafka.start(config)
    except BaseException:
        kafka.stop(config)
        raise
    return config


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def sale_line(salesid: int, now_ms: int) -> bytes:
    """One flattened MySQL sale insert (a new key, a position after every simulated one)."""
    return json.dumps({
        "salesid": salesid, "listid": 1, "sellerid": 1, "buyerid": 2, "eventid": 3, "dateid": 1827,
        "qtysold": 1, "pricepaid": "10.00", "commission": "1.50", "saletime": now_ms,
        "__op": "c", "__deleted": "false", "__source_ts_ms": now_ms, "__db": "ecomm", "__table": "sale",
        "__file": "mysql-bin.999999", "__pos": salesid, "__row": 0,
    }).encode() + b"\n"


def freshness(spark, landing: Path, work: Path, host: str, port: int, samples: int) -> list[float]:
    """Seconds from a landed file to its event visible in bronze.sale (continuous mode, 1 s trigger)."""
    from ingestion.catalog import ThriftCatalog

    if work.exists():
        shutil.rmtree(work)
    options = IngestOptions(landing=str(landing), lake=str(work / "lake"), checkpoints_root=work / "checkpoints",
                            once=False, trigger_seconds=1.0, sync=True, thrift_host=host, thrift_port=port,
                            database="bronze_bench")
    stop = threading.Event()
    thread = threading.Thread(target=run_ingest, args=(options,),
                              kwargs={"spark": spark, "log_stream": None, "stop_event": stop}, daemon=True)
    thread.start()
    folder = landing / "topics" / "tickit.ecomm.sale" / "partition=63"
    folder.mkdir(parents=True, exist_ok=True)
    latencies: list[float] = []
    catalog = ThriftCatalog(host, port)
    try:
        base_id = 900_000_000
        # the first file waits for the backfill and the table's registration: it is not counted
        for index in range(samples + 1):
            salesid = base_id + index
            temp = folder / f".tmp-{index}"
            temp.write_bytes(sale_line(salesid, int(time.time() * 1000)))
            landed = time.perf_counter()
            temp.rename(folder / landing_file_name("tickit.ecomm.sale", 63, index))
            deadline = landed + (600 if index == 0 else 120)
            while time.perf_counter() < deadline:
                try:
                    rows = catalog.execute(f"SELECT count(*) FROM bronze_bench.sale WHERE salesid = {salesid}")
                except Exception:  # noqa: BLE001 - the table is not registered before the first sync
                    rows = [(0,)]
                if rows and int(rows[0][0]) == 1:
                    if index:  # the first one measures the backfill, not freshness
                        latencies.append(time.perf_counter() - landed)
                    break
                time.sleep(0.1)
    finally:
        stop.set()
        thread.join(timeout=120)
        catalog.close()
        shutil.rmtree(folder, ignore_errors=True)
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--format", default="envelope", choices=["envelope", "flattened", "mixed"])
    parser.add_argument("--runs", type=int, default=4, help="runs of each (the first is the cold one)")
    parser.add_argument("--parsers", default="fast,python",
                        help=f"comma-separated {PARSER_ENV} values to measure, in this order (default fast,python)")
    parser.add_argument("--spark-reads", action="store_true",
                        help="also measure the fast parser with the files read by Spark (the path before the "
                             "workers read local files), interleaved with the others")
    parser.add_argument("--serial-writes", action="store_true",
                        help="also measure the fast parser with the tables of a batch written one after another "
                             "(one writer thread instead of WRITE_THREADS), interleaved with the others")
    parser.add_argument("--hudi-floor", action="store_true",
                        help="also write the same files with Spark's JSON reader into Hudi (bulk_insert, the bronze "
                             "options, no CDC parsing: benchmarks/hudi_floor.py), interleaved, and print the ratios")
    parser.add_argument("--avro", action="store_true",
                        help="also ingest the same events from an Avro landing (the S3 sink's AvroFormat) and print "
                             "the ratio Avro / JSON")
    parser.add_argument("--kafka", action="store_true",
                        help="also ingest the same events from Kafka (a KRaft broker started for the benchmark, "
                             "filled once from the JSON landing) and print the ratio Kafka source / JSON")
    parser.add_argument("--freshness-samples", type=int, default=20)
    parser.add_argument("--driver-memory", help="spark.driver.memory of the benchmark's session "
                        "(default: the project's, ingestion/spark.py)")
    parser.add_argument("--work", help="scratch directory (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    parsers = [p.strip() for p in args.parsers.split(",") if p.strip()]
    if not parsers or set(parsers) - set(PARSER_MODES):
        parser.error(f"--parsers takes {', '.join(PARSER_MODES)}")

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    landing = work / "landing"
    broker: kafka.BrokerConfig | None = None
    broker_pids: list[int] = []
    kafka_topics: tuple[str, ...] = ()
    try:
        if not (landing / "topics").is_dir():
            run_simulation(SimulationOptions(landing=str(landing), scale=args.scale, changes=args.changes,
                                             format=args.format, start_time=dt.datetime(2026, 1, 1)))
        lines = landed_lines(landing)
        print(f"landing: {lines} lines, format {args.format}, scale {args.scale}", flush=True)
        avro_landing = work / "landing-avro"
        if args.avro and not (avro_landing / "topics").is_dir():  # the same seed: the same events, in Avro files
            run_simulation(SimulationOptions(landing=str(avro_landing), scale=args.scale, changes=args.changes,
                                             format=args.format, start_time=dt.datetime(2026, 1, 1),
                                             file_format="avro"))
        kafka_produced: dict[str, float] = {}
        if args.kafka:  # before the JVM: neither the broker's start nor producing is timed with the runs
            broker = start_broker(work / "kafka-home")
            state = kafka.status(broker)
            broker_pids = [state.pid] if state.pid else []
            print(f"{state.describe()} (home {broker.home})", flush=True)
            kafka_topics = tuple(sorted({topic for topic, _ in landed_files(str(landing))}))
            started = time.perf_counter()
            produced = produce_landing(str(landing), state.bootstrap)
            produce_seconds = time.perf_counter() - started
            print(f"kafka produce (not timed with the runs): {produced.records} records "
                  f"({produced.tombstones} tombstones, {produced.skipped} already there) to {len(kafka_topics)} "
                  f"topics in {produce_seconds:.1f}s = {produced.records / max(produce_seconds, 1e-9):,.0f} "
                  "records/s", flush=True)
            kafka_produced = {"records": produced.records + produced.skipped, "seconds": round(produce_seconds, 1)}

        # peak resident memory of this process tree (the driver JVM and the Python workers included; the
        # benchmark's Kafka broker left out)
        peak_memory = PeakMemory(excluded=tuple(broker_pids)).__enter__()
        jvm_started = time.perf_counter()
        from ingestion.spark import local_spark_session

        confs = {"spark.ui.showConsoleProgress": "false"}
        if args.driver_memory:
            confs["spark.driver.memory"] = args.driver_memory
        spark = local_spark_session("bench-ingest", extra_confs=confs)
        jvm_seconds = time.perf_counter() - jvm_started
        schema = None

        variants: list[tuple[str, str, bool, bool, Path, str | None]] = [
            (name, name, False, False, landing, None) for name in parsers]
        if args.spark_reads:
            variants.append(("fast, Spark reads", "fast", True, False, landing, None))
        if args.serial_writes:
            variants.append(("fast, serial writes", "fast", False, True, landing, None))
        if args.avro:
            variants.append(("fast, Avro landing", "fast", False, False, avro_landing, None))
        if broker is not None:  # its values go through parse_kafka_value whatever LAKEHOUSE_INGEST_PARSER says
            variants.append((KAFKA_VARIANT, "fast", False, False, landing, broker.bootstrap))
        ingest_times: dict[str, list[float]] = {label: [] for label, *_ in variants}
        ingest_events: dict[str, list[int]] = {label: [] for label, *_ in variants}
        kafka_mismatches = 0
        plain_times: list[float] = []
        floor_times: list[float] = []
        floor = None
        for run in range(args.runs):
            for index, (label, name, spark_reads, serial_writes, source, bootstrap) in enumerate(variants):
                seconds, events, phases = ingest_once(spark, source, work / f"ingest-{index}-{run}", name,
                                                      spark_reads, serial_writes, bootstrap,
                                                      kafka_topics if bootstrap else None)
                ingest_times[label].append(seconds)
                ingest_events[label].append(events)
                print(f"ingest run {run} ({PARSER_ENV}={label}): {seconds:.1f}s, {events} events+bad lines, "
                      f"{lines / seconds:,.0f} lines/s; {phases}", flush=True)
            if broker is not None and ingest_events[KAFKA_VARIANT][run] != ingest_events[parsers[0]][run]:
                kafka_mismatches += 1
                print(f"WARNING: run {run}: the Kafka source ingested {ingest_events[KAFKA_VARIANT][run]} events+bad "
                      f"lines, the JSON landing ({parsers[0]}) {ingest_events[parsers[0]][run]}: the counts differ",
                      flush=True)
            if schema is None:
                schema = landing_schema(spark, landing)
            seconds = plain_spark(spark, landing, work / f"plain-{run}", schema)
            plain_times.append(seconds)
            print(f"plain spark run {run}: {seconds:.1f}s, {lines / seconds:,.0f} rows/s", flush=True)
            if args.hudi_floor:
                if floor is None:  # the schemas inferred before the first timed run
                    floor = floor_tables(spark, landing)
                seconds = spark_json_to_hudi(floor, work / f"floor-{run}")
                floor_times.append(seconds)
                print(f"spark json -> hudi bulk_insert run {run}: {seconds:.1f}s", flush=True)

        # the first run of each pays Python worker start-up and JIT warm-up: it is the cold figure
        warm_plain = plain_times[1:] or plain_times
        plain_median = statistics.median(warm_plain)
        print(f"plain readStream.json -> writeStream.parquet: warm median of {len(warm_plain)} = "
              f"{plain_median:.1f}s = {lines / plain_median:,.0f} rows/s (runs: "
              f"{', '.join(f'{t:.1f}' for t in plain_times)})")
        summary = {"lines": lines, "jvm_seconds": round(jvm_seconds, 1), "plain_median_seconds": round(plain_median, 2)}
        for index, name in enumerate(ingest_times):
            times = ingest_times[name]
            warm = times[1:] or times
            median = statistics.median(warm)
            cold_note = "" if index == 0 else " (not the JVM's first job)"
            print(f"ingest --once, {PARSER_ENV}={name}: warm median of {len(warm)} = {median:.1f}s = "
                  f"{lines / median:,.0f} events/s; cold (JVM start {jvm_seconds:.1f}s + first run{cold_note}) "
                  f"{lines / (jvm_seconds + times[0]):,.0f} events/s; ratio ingest/plain = "
                  f"{median / plain_median:.2f} (runs: {', '.join(f'{t:.1f}' for t in times)})")
            summary[name] = {"warm_median_seconds": round(median, 2), "warm_events_per_s": round(lines / median),
                             "cold_events_per_s": round(lines / (jvm_seconds + times[0])),
                             "ratio_to_plain": round(median / plain_median, 2), "runs": [round(t, 2) for t in times]}
        if floor_times:
            warm_floor = floor_times[1:] or floor_times
            floor_median = statistics.median(warm_floor)
            ingest_median = summary[parsers[0]]["warm_median_seconds"]  # type: ignore[index]
            print(f"spark json -> hudi bulk_insert (no CDC parsing): warm median of {len(warm_floor)} = "
                  f"{floor_median:.1f}s; ratio floor/plain = {floor_median / plain_median:.2f}, ingest ({parsers[0]})"
                  f"/floor = {ingest_median / floor_median:.2f} (runs: {', '.join(f'{t:.1f}' for t in floor_times)})")
            summary["hudi_floor"] = {"warm_median_seconds": round(floor_median, 2),
                                     "ratio_to_plain": round(floor_median / plain_median, 2),
                                     "ingest_ratio": round(ingest_median / floor_median, 2)}
        if args.avro:
            avro_median = summary["fast, Avro landing"]["warm_median_seconds"]  # type: ignore[index]
            json_median = summary[parsers[0]]["warm_median_seconds"]  # type: ignore[index]
            print(f"Avro landing / JSON landing ({parsers[0]}), warm medians: {avro_median:.1f}s / {json_median:.1f}s"
                  f" = {avro_median / json_median:.2f} (goal <= 1.2)")
        if broker is not None:
            kafka_median = summary[KAFKA_VARIANT]["warm_median_seconds"]  # type: ignore[index]
            json_median = summary[parsers[0]]["warm_median_seconds"]  # type: ignore[index]
            print(f"Kafka source: warm median {lines / kafka_median:,.0f} events/s; Kafka source / JSON landing "
                  f"({parsers[0]}), warm medians: {kafka_median:.1f}s / {json_median:.1f}s = "
                  f"{kafka_median / json_median:.2f}; events per run "
                  + ("equal to the JSON landing's" if not kafka_mismatches
                     else f"DIFFERENT from the JSON landing's in {kafka_mismatches} of {args.runs} runs"))
            summary["kafka"] = {"warm_events_per_s": round(lines / kafka_median),
                                "ratio_to_json": round(kafka_median / json_median, 2),
                                "counts_match": not kafka_mismatches, "produced_records": kafka_produced["records"],
                                "produce_seconds": kafka_produced["seconds"]}
        peak_memory.__exit__()
        summary["peak_pss_gb"] = round(peak_memory.peak / 2**30, 2)
        print(f"peak memory (PSS) of the process tree (this Python, the driver JVM, its Python workers): "
              f"{peak_memory.peak / 2**30:.2f} GB (goal <= 4 GB): {peak_memory.describe_peak()}")
        print("summary " + json.dumps(summary, sort_keys=True), flush=True)

        settings = load_settings()
        if args.freshness_samples and port_open(settings.thrift_host, settings.thrift_port):
            fresh_landing = work / "fresh-landing"
            (fresh_landing / "topics").mkdir(parents=True, exist_ok=True)
            latencies = freshness(spark, fresh_landing, work / "freshness", settings.thrift_host,
                                  settings.thrift_port, args.freshness_samples)
            if latencies:
                print(f"freshness (landed -> visible in bronze.sale, trigger 1s, {len(latencies)} samples): "
                      f"p50 {percentile(latencies, 0.5):.2f}s, p95 {percentile(latencies, 0.95):.2f}s")
            else:
                print("freshness: no sample became visible in time")
        elif args.freshness_samples:
            print(f"freshness: skipped, no Thrift server at {settings.thrift_host}:{settings.thrift_port} "
                  "(lakehouse thrift start)")
        spark.stop()
    finally:
        if broker is not None:  # by the PID recorded under its own home, never by name
            print(kafka.stop(broker), flush=True)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
