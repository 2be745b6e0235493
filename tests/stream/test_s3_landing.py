"""An s3:// landing zone (moto's S3 server) read through boto3: mirrored, ingested exactly once."""

from __future__ import annotations

import boto3
import pytest

from ingestion.sources.s3_landing import S3LandingMirror
from ingestion.stream import IngestError, IngestOptions, run_ingest
from tests.stream.conftest import simulate
from tests.stream.judge import compare_events, dead_letter_tuples_bronze, dead_letter_tuples_oracle


def _options(tmp_path, landing: str, **overrides) -> IngestOptions:
    values = dict(landing=landing, lake=str(tmp_path / "lake"), checkpoints_root=tmp_path / "checkpoints",
                  once=True, sync=False)
    values.update(overrides)
    return IngestOptions(**values)


def test_s3_landing_is_ingested_exactly_once_across_runs(spark, tmp_path, moto_endpoint, monkeypatch):  # noqa: F811
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    boto3.client("s3").create_bucket(Bucket="cdc-landing")
    uri = "s3://cdc-landing/kafka-connect"
    simulate(uri, fmt="mixed", scale=0.003, changes=400, inject_bad=6)

    first = run_ingest(_options(tmp_path, uri), spark=spark, log_stream=None)
    report = compare_events(tmp_path / "lake", uri)
    assert report and all(mismatches == 0 for _, _, mismatches in report.values()), report
    assert dead_letter_tuples_bronze(tmp_path / "lake") == dead_letter_tuples_oracle(uri)
    first_files = sum(r.files for r in first.reports)

    simulate(uri, fmt="mixed", scale=0.003, changes=300, inject_bad=0, start=None)  # a second run lands more
    second = run_ingest(_options(tmp_path, uri), spark=spark, log_stream=None)
    report = compare_events(tmp_path / "lake", uri)
    assert all(mismatches == 0 for _, _, mismatches in report.values()), report
    landed = [k for k in S3LandingMirror(uri, tmp_path / "m").storage.list("topics/") if k.endswith(".json")]
    assert first_files + sum(r.files for r in second.reports) == len(landed)  # every file read exactly once


def test_missing_bucket_is_a_clear_error(tmp_path, moto_endpoint, monkeypatch):  # noqa: F811
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    with pytest.raises(IngestError, match=r"s3://no-such-bucket/x: cannot list s3://no-such-bucket"):
        run_ingest(_options(tmp_path, "s3://no-such-bucket/x"), spark=object(), log_stream=None)
