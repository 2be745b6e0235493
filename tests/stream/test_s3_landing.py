"""An ``s3://`` landing zone and the streaming checkpoint on moto's S3 server, both through Hadoop's S3A.

The run's shared SparkSession started before moto did, so the module gives its Hadoop
configuration the settings every project session starts with (``ingestion.spark.s3a_confs``,
from ``AWS_ENDPOINT_URL``) and, for its bucket only, moto's fake keys (the JVM's environment,
where S3A looks first, predates them); a bucket name of its own keeps S3A's per-bucket client
cache from answering with another module's endpoint.
"""

from __future__ import annotations

import os
import uuid

import boto3
import pytest

from ingestion import files
from ingestion.sources.landing import count_landed_files
from ingestion.spark import s3a_confs
from ingestion.stream import IngestError, IngestOptions, run_ingest
from ingestion.stream.checkpoint import ABORTABLE_MANAGER, FILE_MANAGER_CONF, query_dir
from lakehouse.status import processed_files
from tests.stream.conftest import simulate
from tests.stream.judge import compare_events, dead_letter_tuples_bronze, dead_letter_tuples_oracle


@pytest.fixture(scope="module")
def bucket(spark, moto_endpoint):
    """A fresh bucket on moto's server, reachable from the shared session through S3A."""
    name = f"cdc-{uuid.uuid4().hex[:12]}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()
        for key, value in s3a_confs().items():
            hadoop.set(key.removeprefix("spark.hadoop."), value)
        per_bucket = f"fs.s3a.bucket.{name}"
        hadoop.set(f"{per_bucket}.aws.credentials.provider", "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
        hadoop.set(f"{per_bucket}.access.key", os.environ["AWS_ACCESS_KEY_ID"])
        hadoop.set(f"{per_bucket}.secret.key", os.environ["AWS_SECRET_ACCESS_KEY"])
        boto3.client("s3").create_bucket(Bucket=name)
        yield name


def _options(tmp_path, landing: str, checkpoints: str, **overrides) -> IngestOptions:
    values = dict(landing=landing, lake=str(tmp_path / "lake"), checkpoints_root=checkpoints, once=True, sync=False)
    values.update(overrides)
    return IngestOptions(**values)


def test_s3_landing_and_checkpoint_ingest_every_file_exactly_once(spark, tmp_path, bucket):
    landing = f"s3://{bucket}/kafka-connect"
    checkpoints = f"s3a://{bucket}/checkpoints"
    simulate(landing, fmt="mixed", scale=0.003, changes=400, inject_bad=6)

    first = run_ingest(_options(tmp_path, landing, checkpoints), spark=spark, log_stream=None)
    assert spark.conf.get(FILE_MANAGER_CONF) == ABORTABLE_MANAGER
    report = compare_events(tmp_path / "lake", landing)
    assert report and all(mismatches == 0 for _, _, mismatches in report.values()), report
    assert dead_letter_tuples_bronze(tmp_path / "lake") == dead_letter_tuples_oracle(landing)

    # the checkpoint lives in the bucket, written once per file (no rename leftovers)
    assert first.checkpoint.startswith(f"s3a://{bucket}/checkpoints/")
    written = files.list_files(first.checkpoint)
    assert "pair.json" in written and "query/metadata" in written, written
    assert any(name.startswith("query/commits/") for name in written), written
    assert not [name for name in written if ".tmp" in name or name.rpartition("/")[2].startswith(".")], written

    simulate(landing, fmt="mixed", scale=0.003, changes=300, inject_bad=0, start=None)  # a second run lands more
    second = run_ingest(_options(tmp_path, landing, checkpoints), spark=spark, log_stream=None)
    assert second.checkpoint == first.checkpoint
    report = compare_events(tmp_path / "lake", landing)
    assert all(mismatches == 0 for _, _, mismatches in report.values()), report
    landed = count_landed_files(landing)
    assert landed is not None and landed > 0
    assert sum(r.files for r in first.reports) + sum(r.files for r in second.reports) == landed
    assert processed_files(first.checkpoint) == landed  # what 'lakehouse status' reads from the bucket
    assert files.read_text(f"{query_dir(first.checkpoint)}/metadata")


def test_a_local_checkpoint_keeps_spark_s_default_file_manager(spark, tmp_path, bucket):
    landing = f"s3://{bucket}/small"
    simulate(landing, fmt="envelope", scale=0.002, changes=20, inject_bad=0)
    summary = run_ingest(_options(tmp_path, landing, str(tmp_path / "checkpoints")), spark=spark, log_stream=None)
    assert summary.checkpoint.startswith(str(tmp_path / "checkpoints"))
    assert spark.conf.get(FILE_MANAGER_CONF, None) is None
    assert processed_files(summary.checkpoint) == count_landed_files(landing)


def test_a_landing_in_a_missing_bucket_is_a_clear_error(tmp_path, bucket):
    expected = r"^landing zone s3://no-such-bucket/x: .*cannot list: .*NoSuchBucket"
    with pytest.raises(IngestError, match=expected) as caught:
        run_ingest(_options(tmp_path, "s3://no-such-bucket/x", str(tmp_path / "c")), spark=object(), log_stream=None)
    assert "AWS_ENDPOINT_URL" in (caught.value.hint or "")
    with pytest.raises(IngestError, match=rf"^landing zone s3://{bucket}/nothing-landed: no topics/ directory$"):
        run_ingest(_options(tmp_path, f"s3://{bucket}/nothing-landed", str(tmp_path / "c")), spark=object(),
                   log_stream=None)
