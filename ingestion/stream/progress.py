"""A live progress display for ``--once`` backfills (rich, on stderr)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ingestion.sources import landing as landing_zone


def count_landed_files(landing: str) -> int | None:
    """Landed files right now (local landing zones only; None elsewhere)."""
    if "://" in landing:
        return None
    return landing_zone.count_landed_files(landing)


class BackfillProgress:
    def __init__(self, landing: str):
        self.total = count_landed_files(landing)
        self.events = 0
        self.progress = Progress(
            TextColumn("ingest"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
            TextColumn("{task.fields[events]} events"), TimeElapsedColumn(),
            console=Console(stderr=True), transient=False,
        )
        self.task = self.progress.add_task("ingest", total=self.total, events=0)

    def __enter__(self) -> BackfillProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def update(self, report) -> None:
        self.events += sum(report.events.values())
        self.progress.update(self.task, advance=report.files, events=self.events)
