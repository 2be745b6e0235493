"""A live progress display for ``--once`` backfills (rich, on stderr)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ingestion.sources import landing as landing_zone


class BackfillProgress:
    def __init__(self, landing: str):
        self.total = landing_zone.count_landed_files(landing)
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
