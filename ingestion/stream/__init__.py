"""The Structured Streaming ingestion: landing zone -> Hudi bronze, exactly once, with dead-letter.

Public API::

    from ingestion.stream import IngestOptions, run_ingest
    summary = run_ingest(IngestOptions(landing=..., lake=..., checkpoints_root=settings.checkpoints_for(lake)))
"""

from ingestion.stream.job import IngestError, IngestOptions, IngestSummary, run_ingest

__all__ = ["IngestError", "IngestOptions", "IngestSummary", "run_ingest"]
