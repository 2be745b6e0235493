"""Light reads of the lake's Hudi tables for the operator's commands (status, dead-letter list).

Through hudi-rs (the ``hudi`` package, a Hudi reader without a JVM), so ``lakehouse status``
answers in a second; everything the ingestion writes goes through Apache Hudi's Java writer.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

import pyarrow as pa
from hudi import HudiReadOptions, HudiTableBuilder

from ingestion import files


def storage_options(path: str) -> dict[str, str]:
    """hudi-rs object-store options of an ``s3://``/``s3a://`` table from the AWS environment
    (the endpoint of an S3-compatible store, plain HTTP when it is ``http://``, region, keys)."""
    if urlparse(str(path)).scheme not in ("s3", "s3a"):
        return {}
    options = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["aws_endpoint_url"] = endpoint
        options["aws_allow_http"] = str(endpoint.startswith("http://")).lower()
    for option, variable in (("aws_region", "AWS_REGION"), ("aws_region", "AWS_DEFAULT_REGION"),
                             ("aws_access_key_id", "AWS_ACCESS_KEY_ID"),
                             ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"),
                             ("aws_session_token", "AWS_SESSION_TOKEN")):
        if os.environ.get(variable) and option not in options:
            options[option] = os.environ[variable]
    return options


def _open(path: str):
    builder = HudiTableBuilder.from_base_uri(str(path))
    for key, value in storage_options(path).items():
        builder = builder.with_storage_option(key, value)
    return builder.build()


def completed_commits(path: str) -> list[str]:
    """Instants of the table's completed commits, oldest first."""
    return [instant.timestamp for instant in _open(path).get_timeline().get_completed_commits()]


def read_latest(path: str, columns: list[str] | None = None) -> pa.Table | None:
    """The latest snapshot (optionally only ``columns``), or None when no row is committed."""
    options = HudiReadOptions()
    if columns is not None:
        options = options.with_projection(columns)
    batches = _open(path).read(options)
    return pa.Table.from_batches(batches) if batches else None


def latest_rows(path: str) -> list[dict]:
    """The latest snapshot's rows as dicts (``_hoodie_*`` meta columns included); none when the
    table does not exist yet or holds no row."""
    if not files.holds_hudi_table(path):
        return []
    table = read_latest(path)
    return [] if table is None else table.to_pylist()


def row_count(path: str) -> int:
    """Rows of the latest snapshot (read from the record keys only)."""
    table = read_latest(path, ["_hoodie_record_key"])
    return 0 if table is None else table.num_rows


def column_names(path: str) -> list[str]:
    """The data columns of the table's latest schema (no ``_hoodie_*`` meta columns)."""
    return list(schema(path).names)


def schema(path: str) -> pa.Schema:
    """The table's latest schema (data columns, no ``_hoodie_*`` meta columns), as hudi-rs reads it."""
    return _open(path).get_schema()
