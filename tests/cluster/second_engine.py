"""A second, independent Spark application that knows nothing of the project but the metastore.

Submitted by ``tests/cluster/test_metastore.py`` with ``spark-submit``: only the Hudi bundle (and
S3A for the lake on S3) on its classpath, a Hive catalog at ``hive.metastore.uris``, none of the
project's modules. It finds the tables by name in the shared metastore, as Trino or an EMR job
would, and prints what it reads as one JSON object:
``{"bronze": {table: row count}, "silver": {relation: [[column values as strings], ...]}}``.

usage: second_engine.py RELATION=COLUMNS... (COLUMNS: comma-separated, for each silver relation)
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession


def main(argv: list[str]) -> int:
    spark = SparkSession.builder.appName("second-engine").enableHiveSupport().getOrCreate()
    bronze = {row.tableName: spark.table(f"bronze.`{row.tableName}`").count()
              for row in spark.sql("show tables in bronze").collect()}
    silver = {}
    for spec in argv:
        relation, columns = spec.split("=", 1)
        select = ", ".join(f"cast(`{c}` as string)" for c in columns.split(","))
        silver[relation] = [list(row) for row in spark.sql(f"select {select} from silver.`{relation}`").collect()]
    print(json.dumps({"bronze": bronze, "silver": silver}))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
