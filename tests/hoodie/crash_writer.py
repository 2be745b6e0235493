"""Subprocess body of the crash tests: write one batch and SIGKILL ourselves at a chosen point.

    python -m tests.hoodie.crash_writer <table> <point> <first_id> <count> [spark]

With ``spark`` the batch is a Spark DataFrame (files written by Python workers of a local Spark);
the point ``while_executors_write`` kills the driver one second after the inflight instant lands.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import pyarrow as pa

from ingestion.hoodie import HoodieTable, merge, timeline
from ingestion.hoodie.timeline import COMPLETED, INFLIGHT


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install(point: str) -> None:
    original_write = timeline.Timeline.write
    original_slice = merge.write_parquet_slice
    written = []

    def timeline_write(self, instant, payload):
        if point == "before_inflight" and instant.state == INFLIGHT:
            _die()
        if point == "while_executors_write" and instant.state == INFLIGHT:
            threading.Timer(1.0, _die).start()
        if point == "before_complete" and instant.state == COMPLETED:
            _die()
        if point == "torn_complete" and instant.state == COMPLETED:
            tmp = self.meta_dir / f".{instant.file_name()}.{os.getpid()}.tmp"
            tmp.write_bytes(payload[: len(payload) // 2])
            _die()
        original_write(self, instant, payload)
        if point == "after_complete" and instant.state == COMPLETED:
            _die()

    def slice_write(rows, path, options, row_groups=None):
        size = original_slice(rows, path, options, row_groups)
        written.append(path)
        if point == "during_files" and len(written) == 1:
            _die()
        return size

    timeline.Timeline.write = timeline_write
    merge.write_parquet_slice = slice_write


def main() -> None:
    base, point, first_id, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    table = HoodieTable.open(base)
    install(point)
    ids = list(range(first_id, first_id + count))
    data = pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "seq": pa.array([10] * count, pa.int64()),
            "part": pa.array([f"p{i % 3}" for i in ids]),
        }
    )
    if len(sys.argv) > 5 and sys.argv[5] == "spark":
        from ingestion.spark import local_spark_session

        spark = local_spark_session("crash-writer", extra_confs={"spark.ui.showConsoleProgress": "false"})
        data = spark.createDataFrame(data).repartition(2)
    with table.writer(small_file_bytes=10 * 1024 * 1024) as writer:
        writer.write(data, operation="upsert")
    print("finished")


if __name__ == "__main__":
    main()
