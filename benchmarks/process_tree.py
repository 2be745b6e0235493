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
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # the process ended
        return found
    for task in tasks:
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


def cmdline(pid: int) -> bytes | None:
    """The raw command line of ``pid`` (None when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def spawning(pid: int, parent_cmdline: bytes | None) -> bool:
    """Whether ``pid`` is a JVM's child not yet running its own program.

    The JVM starts a process (Hadoop's shell commands, PySpark's daemon) with ``posix_spawn``,
    whose child shares the JVM's memory until it executes the program: its ``smaps_rollup``
    then reports the JVM's whole memory a second time. Such a child still shows the JVM's
    command line (a JVM never forks without executing), and is counted as nothing.
    """
    if not parent_cmdline or program(parent_cmdline) != "java":
        return False
    own = cmdline(pid)
    return own is None or own == parent_cmdline


def tree_pss_by_process(root: int) -> dict[int, int]:
    """Memory (PSS) of ``root`` and each of its descendants right now, in bytes, by pid."""
    found: dict[int, int] = {}
    stack: list[tuple[int, bytes | None]] = [(root, None)]
    while stack:
        pid, parent_cmdline = stack.pop()
        if pid in found:
            continue
        if spawning(pid, parent_cmdline):
            found[pid] = 0
            continue
        found[pid] = pss(pid)
        own = cmdline(pid)
        stack += [(child, own) for child in children(pid)]
    return found


def tree_pss(root: int) -> int:
    """Memory (PSS) of ``root`` and all its descendants right now, in bytes."""
    return sum(tree_pss_by_process(root).values())


def program(raw_cmdline: bytes) -> str:
    """The program's file name in a raw command line (``java``, ``python3.11``, ...)."""
    return os.path.basename(raw_cmdline.split(b"\0")[0].decode(errors="replace"))


def process_kind(pid: int) -> str:
    """A short name of what ``pid`` runs: ``java``, ``python <script or module>``, or its program."""
    raw = cmdline(pid)
    if raw is None:
        return "gone"
    name = program(raw)
    if name.startswith("python"):
        rest = [a.decode(errors="replace") for a in raw.split(b"\0")[1:] if a and not a.startswith(b"-")]
        return f"python {os.path.basename(rest[0]) if rest else ''}".strip()
    return name or "?"


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
        #: at the peak: memory per kind of process (``process_kind``), in bytes
        self.peak_by_kind: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> dict[int, int]:
        """The tree's memory now by pid, without the excluded subtrees."""
        left_out = {pid for root in self.excluded for pid in tree_pss_by_process(root)}
        return {pid: size for pid, size in tree_pss_by_process(self.root).items() if pid not in left_out}

    def _take(self) -> None:
        """One sample; a new peak keeps its share per kind of process."""
        by_pid = self.sample()
        total = sum(by_pid.values())
        if total > self.peak:
            self.peak = total
            kinds: dict[str, int] = {}
            for pid, size in by_pid.items():
                kind = process_kind(pid)
                kinds[kind] = kinds.get(kind, 0) + size
            self.peak_by_kind = kinds

    def _run(self) -> None:
        while not self._stop.is_set():
            self._take()
            self._stop.wait(self.interval)

    def describe_peak(self) -> str:
        """The peak's share per kind of process, largest first (``java 3.10 GB, python pyspark.daemon ...``)."""
        return ", ".join(f"{kind} {size / 2**30:.2f} GB"
                         for kind, size in sorted(self.peak_by_kind.items(), key=lambda item: -item[1])
                         if size >= 2**24)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._take()
