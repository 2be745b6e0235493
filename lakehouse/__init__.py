"""The operator's tool of the TICKIT CDC lakehouse: the ``lakehouse`` command, the services it
starts (Spark Thrift server), the scheduled dbt jobs, the analysts' docs site and the demo."""

__version__ = "0.1.0"
