"""Keep PySpark's per-task garbage collection from walking the worker's modules.

A reused Python worker (``spark.python.worker.reuse``, Spark's default) runs a full
``gc.collect()`` after every task (``pyspark/daemon.py``). With pyarrow, numpy and the
ingestion's modules loaded a worker tracks ~100,000 objects, and that collection took
45-95 ms of a core per task on the development machine: more than a small table's decoding,
paid by every parse and decoding task of every micro-batch (docs/performance.md).

``gc.freeze()`` moves the objects alive at a task's start (imported modules, caches, what
earlier tasks kept) to Python's permanent generation, which collections skip; the collection
after the task then looks only at what the task itself made (~0.1 ms). Garbage a task leaves
is still collected by that collection, before the next task freezes anything. Outside a
Spark task (the driver, a test calling a worker body directly) nothing is frozen.
"""

from __future__ import annotations

import gc

from pyspark import TaskContext


def freeze_worker_objects() -> bool:
    """Exempt the objects alive now from later collections (``gc.freeze``) when running in a Spark
    task; call at a task's start. Whether it froze."""
    if TaskContext.get() is None:
        return False
    gc.freeze()
    return True
