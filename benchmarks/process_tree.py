"""Peak memory of a process tree, sampled from /proc (Linux), for the benchmarks.

Memory is the proportional set size (PSS): a page shared by several processes of the tree
(PySpark's forked workers share their daemon's pages) is split between them instead of
being counted once per process as RSS would.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's children file)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def pss(pid: int) -> int:
    """Proportional set size of ``pid`` in bytes (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def tree_pss(root: int) -> int:
    """Memory (PSS) of ``root`` and all its descendants right now, in bytes."""
    total, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += pss(pid)
        stack += children(pid)
    return total


class PeakMemory:
    """Samples the tree of ``root`` every ``interval`` seconds while in a ``with`` block.

    ``excluded``: roots of subtrees left out (e.g. a Kafka broker the benchmark started as
    a child, which is no part of the ingestion's memory).
    """

    def __init__(self, root: int | None = None, interval: float = 0.5, excluded: tuple[int, ...] = ()):
        self.root = os.getpid() if root is None else root
        self.interval = interval
        self.excluded = excluded
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> int:
        """The tree's memory now, without the excluded subtrees."""
        return max(0, tree_pss(self.root) - sum(tree_pss(pid) for pid in self.excluded))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.sample())
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.sample())
