"""Run a micro-batch's table writes on two cores: one share in a forked child, one in the driver.

A micro-batch's parse runs on every core (Spark tasks), but its Hudi commits ran one
table after another in the driver, on one core. Threads do not help there (measured: no
gain, 3-5x the system time; the writer makes many short pyarrow calls and holds the GIL
between them), a forked process does: it inherits the batch's Arrow tables without a
copy (copy-on-write) and returns only the small outcome of each write through a pipe.

The tables are split by row count (largest first onto the lighter share). Each table's
commit is independent and exactly-once by itself (``ingestion.stream.commit``), so
running two shares at once changes no guarantee: a crash in either leaves every table
either committed with the batch's marker or untouched, as the serial order did. A failed
child fails the batch with the child's error.

The child is forked from the driver, a threaded process (py4j, Spark's callbacks): it
only runs the pure-Python/pyarrow writer on local files and leaves with ``os._exit``
(multiprocessing's fork start), never touching the JVM gateway or the inherited locks of
other threads.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Result = TypeVar("Result")

#: below this many rows in a batch, forking costs more than it saves (a fork of the
#: driver takes ~10-30 ms; a write of 10K rows ~50 ms)
MIN_ROWS_TO_FORK = 50_000
#: set to 0 to write every table from the driver, in turn
FORK_ENV = "LAKEHOUSE_INGEST_FORK_WRITES"
#: overrides MIN_ROWS_TO_FORK (the crash tests fork on every batch with 1)
FORK_MIN_ROWS_ENV = "LAKEHOUSE_INGEST_FORK_MIN_ROWS"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def split_by_size(sizes: dict[str, int]) -> tuple[list[str], list[str]]:
    """Two shares of the names with balanced total size (largest first onto the lighter share), order kept."""
    shares: tuple[list[str], list[str]] = ([], [])
    totals = [0, 0]
    for name in sorted(sizes, key=lambda n: (-sizes[n], n)):
        lighter = 0 if totals[0] <= totals[1] else 1
        shares[lighter].append(name)
        totals[lighter] += sizes[name]
    order = {name: index for index, name in enumerate(sizes)}
    return sorted(shares[0], key=order.get), sorted(shares[1], key=order.get)


def fork_available() -> bool:
    return (os.environ.get(FORK_ENV, "1") != "0" and "fork" in multiprocessing.get_all_start_methods()
            and (os.cpu_count() or 1) > 1)


def _die_with(parent: int) -> None:
    """Linux: have the kernel kill this child when the driver dies, even by SIGKILL.

    Otherwise an orphaned writer could still hold a table's writer lock (or be committing)
    when the restarted ingestion replays the batch. A child killed mid-commit leaves an
    inflight instant, which the next writer rolls back, as after a killed driver.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: nothing to set
        return
    if os.getppid() != parent:  # the driver died before the setting took
        os._exit(1)


def _child(names: Sequence[str], work: Callable[[str], Any], conn, parent: int) -> None:
    _die_with(parent)
    try:
        conn.send(("ok", [work(name) for name in names]))
    except BaseException as error:  # noqa: BLE001 - everything goes back to the driver
        conn.send(("error", f"{type(error).__name__}: {error}\n{traceback.format_exc()}"))
    finally:
        conn.close()


def run_shares(names: Sequence[str], sizes: dict[str, int], work: Callable[[str], Result]) -> list[Result]:
    """``work(name)`` for every name, results in the order of ``names``.

    With enough rows and two cores the work is split in two shares, one run in a forked
    child; otherwise everything runs here, in order.
    """
    min_rows = int(os.environ.get(FORK_MIN_ROWS_ENV, "") or MIN_ROWS_TO_FORK)
    if sum(sizes.get(n, 0) for n in names) < min_rows or len(names) < 2 or not fork_available():
        return [work(name) for name in names]
    here, there = split_by_size({n: sizes.get(n, 0) for n in names})
    if not here or not there:
        return [work(name) for name in names]
    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_child, args=(there, work, send, os.getpid()),
                                                         daemon=True)
    child.start()
    send.close()
    try:
        results = {name: work(name) for name in here}
    finally:
        try:
            status, payload = receive.recv()
        except EOFError:
            child.join()
            status, payload = "error", f"the writer process exited with code {child.exitcode}"
        child.join()
        receive.close()
    if status != "ok":
        raise RuntimeError(f"writing {', '.join(there)} in a forked writer failed: {payload}")
    results.update(zip(there, payload, strict=True))
    return [results[name] for name in names]
