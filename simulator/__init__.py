"""The TICKIT CDC simulator: Debezium change streams into a Kafka Connect S3-sink landing zone + oracle.

Entry points: ``simulator.simulation.run_simulation`` (what ``lakehouse simulate``
calls) and ``simulator.oracle.load_oracle`` (the expected results for tests).
"""
