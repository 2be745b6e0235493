"""The command line of a benchmark baseline run as a process of its own (``bench_processes.py``).

A baseline script (``plain_spark.py``, ``hudi_floor.py``) is called twice per landing: first
without its schema file, to infer the landing's schemas and write them (an untimed preparation
run), then with it for each timed run, which prints ``{"<label>_seconds": ...}`` as its last line.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def run_baseline(argv: list[str] | None, description: str, label: str, start_session: Callable[[], Any],
                 infer: Callable[[Any, Path], Any], timed: Callable[[Any, Path, Path, Any], float]) -> int:
    """Parse ``--landing --out --schemas``; infer and write the schemas, or time one run with them.

    ``infer(spark, landing)`` returns the schemas as a JSON value; ``timed(spark, landing, out,
    schemas)`` takes that value back and returns the run's seconds.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--landing", required=True, help="landing zone (its topics/ folder holds the .json files)")
    parser.add_argument("--out", required=True, help="scratch directory for the run's output (removed after)")
    parser.add_argument("--schemas", required=True,
                        help="file with the landing's Spark schemas as JSON: read if present, else inferred and "
                             "written (an untimed preparation run)")
    args = parser.parse_args(argv)
    spark = start_session()
    schema_file = Path(args.schemas)
    if schema_file.exists():
        seconds = timed(spark, Path(args.landing), Path(args.out), json.loads(schema_file.read_text()))
        print(json.dumps({f"{label}_seconds": round(seconds, 2)}), flush=True)
    else:
        schema_file.write_text(json.dumps(infer(spark, Path(args.landing))))
    spark.stop()
    return 0
