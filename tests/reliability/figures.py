"""Figures of the reliability suite: one row per scenario, printed at the end of the run.

Columns (the acceptance table of issue 8):

* ``trials``: independent runs of the scenario (hypothesis examples, crash/restart
  cycles, reader polls, ...);
* ``events``: change events (or lines, or answers) the scenario checked;
* ``lost``: events the oracle has and the result lacks;
* ``duplicated``: events the result holds more often than the oracle;
* ``errors``: unexpected failures (an exception where a dead letter was due, a reader
  answer that matches no committed snapshot, a build that did not recover, ...).

Every test that owns a scenario adds its counts with ``record`` (also when it fails, so
the table shows what went wrong). The table is also written as JSON to
``$LAKEHOUSE_RELIABILITY_FIGURES`` (default ``.lakehouse/reliability-figures.json``).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

COLUMNS = ("trials", "events", "lost", "duplicated", "errors")
DEFAULT_FIGURES_FILE = Path(".lakehouse") / "reliability-figures.json"


@dataclass
class Figure:
    scenario: str
    trials: int = 0
    events: int = 0
    lost: int = 0
    duplicated: int = 0
    errors: int = 0
    note: str = ""


_FIGURES: dict[str, Figure] = {}
_LOCK = threading.Lock()


def record(scenario: str, *, trials: int = 0, events: int = 0, lost: int = 0, duplicated: int = 0,
           errors: int = 0, note: str | None = None) -> Figure:
    """Add counts to ``scenario`` (created on first use)."""
    with _LOCK:
        figure = _FIGURES.setdefault(scenario, Figure(scenario))
        figure.trials += trials
        figure.events += events
        figure.lost += lost
        figure.duplicated += duplicated
        figure.errors += errors
        if note is not None:
            figure.note = note
        return figure


def figures() -> list[Figure]:
    with _LOCK:
        return [Figure(**asdict(f)) for f in _FIGURES.values()]


def render_table(rows: list[Figure]) -> str:
    """A plain-text table: scenario | trials | events | lost | duplicated | errors | note."""
    header = ("scenario", *COLUMNS, "note")
    body = [(f.scenario, *(str(getattr(f, c)) for c in COLUMNS), f.note) for f in rows]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        parts = [cells[0].ljust(widths[0])]
        parts += [cell.rjust(width) for cell, width in zip(cells[1:-1], widths[1:-1], strict=True)]
        parts.append(cells[-1])
        return " | ".join(parts).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(row) for row in body)])


def write_json(rows: list[Figure], path: Path | None = None) -> Path:
    target = Path(path or os.environ.get("LAKEHOUSE_RELIABILITY_FIGURES", DEFAULT_FIGURES_FILE))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps([asdict(f) for f in rows], indent=2) + "\n")
    return target
