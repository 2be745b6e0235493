"""Long-running processes the ``lakehouse`` command starts and stops by PID (Spark Thrift server,
docs server, scheduler)."""
