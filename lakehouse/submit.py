"""The file to give ``spark-submit``: runs ``lakehouse`` with the arguments after it, in the driver
spark-submit started, so the submission's master, deploy mode, class path and resources stand.

    spark-submit --master spark://127.0.0.1:7077 \\
      --driver-class-path "$(python -m ingestion.jvm classpath spark)" \\
      --conf spark.executor.extraClassPath="$(python -m ingestion.jvm classpath spark)" \\
      lakehouse/submit.py ingest --once

The project must be installed in the Python that runs the driver and the executors
(``PYSPARK_PYTHON``): the parse workers are Python. ``docs/cluster.md`` has the EMR step.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    # run as a script, its own directory is first on sys.path, where lakehouse's modules would
    # shadow top-level ones (config, services...): import the installed package instead
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)
    from lakehouse.cli import main

    sys.exit(main())
