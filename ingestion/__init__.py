"""TICKIT CDC lakehouse: Debezium landing zone -> Hudi bronze -> dbt on Spark."""

__version__ = "0.1.0"
