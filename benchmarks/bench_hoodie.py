"""Benchmark of the project's Hudi writer against plain Spark parquet writes.

Prints medians of several runs (snappy everywhere):
  - insert of N rows (default 1M) into a new Hudi table: rows/s, MB/s, ratio to df.write.parquet
    of the same rows (goal <= 1.3);
  - upsert of 10% random keys into that table: seconds and ratio to the N-row insert (goal <= 3).

    .venv/bin/python benchmarks/bench_hoodie.py [--rows 1000000] [--runs 3] [--days 10]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from ingestion.hoodie import HoodieTable, TableConfig
from ingestion.spark import local_spark_session

SOURCE_SQL = """
SELECT CAST(id AS INT) AS salesid,
       lpad(CAST(id AS STRING), 20, '0') AS _cdc_position,
       CAST(id % 50000 AS INT) AS listid,
       CAST(id % 49990 AS INT) AS buyerid,
       CAST((id * 7) % 100000 / 100.0 AS DECIMAL(8,2)) AS pricepaid,
       CAST(id % 4 + 1 AS INT) AS qtysold,
       rand(7) * 1000 AS commission,
       id % 3 = 0 AS is_promo,
       TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id % 864000) AS saletime,
       concat('note-', CAST(id % 1000 AS STRING)) AS note,
       date_add(DATE'2024-01-01', CAST(id % {days} AS INT)) AS _cdc_source_date
FROM range({rows})
"""


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--days", type=int, default=10, help="partitions (days) the rows spread over")
    parser.add_argument("--upsert-fraction", type=float, default=0.10)
    parser.add_argument("--scratch", default=None, help="scratch directory (default: a temporary one)")
    args = parser.parse_args()

    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="bench-hoodie-"))
    spark = local_spark_session("bench-hoodie", warehouse_dir=str(scratch / "warehouse"),
                                extra_confs={"spark.ui.showConsoleProgress": "false"})
    source = spark.sql(SOURCE_SQL.format(rows=args.rows, days=args.days)).cache()
    source.count()
    updates = (
        source.sample(fraction=args.upsert_fraction, seed=11)
        .withColumnRenamed("pricepaid", "old_price")
        .selectExpr("*", "CAST(old_price + 1 AS DECIMAL(8,2)) AS pricepaid")
        .drop("old_price")
        .select(*source.columns)
        .cache()
    )
    update_rows = updates.count()
    cfg = TableConfig(name="sale", database="bronze", record_key_fields=("salesid",),
                      precombine_field="_cdc_position", partition_fields=("_cdc_source_date",))
    plain, insert, upsert, plain_mb, hudi_mb = [], [], [], [], []
    try:
        for run in range(args.runs):
            target = scratch / f"plain-{run}"
            start = time.perf_counter()
            source.write.option("compression", "snappy").parquet(str(target))
            plain.append(time.perf_counter() - start)
            plain_mb.append(dir_bytes(target) / 1e6)
            shutil.rmtree(target)

            base = scratch / f"hudi-{run}"
            table = HoodieTable.create_or_open(base, cfg)
            with table.writer(compression="snappy") as writer:
                start = time.perf_counter()
                writer.write(source, operation="insert")
                insert.append(time.perf_counter() - start)
                hudi_mb.append(dir_bytes(base) / 1e6)
                start = time.perf_counter()
                writer.write(updates, operation="upsert")
                upsert.append(time.perf_counter() - start)
            shutil.rmtree(base)
            print(f"run {run + 1}: parquet {plain[-1]:.1f}s  hudi insert {insert[-1]:.1f}s  "
                  f"hudi upsert ({update_rows} rows) {upsert[-1]:.1f}s", flush=True)
    finally:
        spark.stop()
        if args.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)
    p, i, u = statistics.median(plain), statistics.median(insert), statistics.median(upsert)
    print(f"\nrows={args.rows} days={args.days} runs={args.runs} (medians, snappy)")
    plain_rate, hudi_rate = statistics.median(plain_mb) / p, statistics.median(hudi_mb) / i
    print(f"spark df.write.parquet : {p:7.2f} s  {args.rows / p:12,.0f} rows/s  {plain_rate:7.1f} MB/s")
    print(f"hudi insert            : {i:7.2f} s  {args.rows / i:12,.0f} rows/s  {hudi_rate:7.1f} MB/s")
    print(f"hudi upsert {update_rows:>9} rows: {u:7.2f} s  {update_rows / u:12,.0f} rows/s")
    run_insert = statistics.median(a / b for a, b in zip(insert, plain, strict=True))
    run_upsert = statistics.median(a / b for a, b in zip(upsert, insert, strict=True))
    print(f"ratio insert / parquet : {i / p:5.2f} of medians, {run_insert:5.2f} median of per-run ratios (goal <= 1.3)")
    print(f"ratio upsert / insert  : {u / i:5.2f} of medians, {run_upsert:5.2f} median of per-run ratios (goal <= 3)")


if __name__ == "__main__":
    main()
