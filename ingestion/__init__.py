"""The streaming ingestion: Debezium change events (landing zone) -> Apache Hudi bronze tables.

``cdc`` is the event model (pure Python), ``sources`` reads the landing zone, ``stream`` is the
Structured Streaming job, ``catalog`` registers bronze in the metastore.
"""
