"""Whether a process recorded in a lock file still runs: its PID and its start time.

A PID alone can be reused by a later process; the start time (``/proc/<pid>/stat``, field 22,
clock ticks since boot) tells the recorded process from a newcomer with the same number.
"""

from __future__ import annotations

import os
from pathlib import Path


def process_start_ticks(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot, or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22; the command name (field 2) may contain spaces, so split after its ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19] if len(fields) > 19 else None


def pid_alive(pid: int, start_ticks: str | None = None) -> bool:
    """True if ``pid`` runs and (when known) started at ``start_ticks``."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if start_ticks is None:
        return True
    current = process_start_ticks(pid)
    return current is None or current == start_ticks
