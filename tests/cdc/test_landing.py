"""Kafka Connect S3-sink file names and directories."""

from __future__ import annotations

import pytest

from ingestion.cdc.landing import LandingFile, LandingPathError, landing_file_name, parse_landing_path


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "/data/landing/topics/tickit.ecomm.sale/partition=2/tickit.ecomm.sale+2+0000001000.json",
            LandingFile("tickit.ecomm.sale", 2, 1000),
        ),
        (
            "s3://bucket/prefix/topics/tickit.ems.event/year=2026/month=11/day=22/tickit.ems.event+0+0000000000.json",
            LandingFile("tickit.ems.event", 0, 0),
        ),
        (
            "topics/tickit.tickit.crm.user/tickit.tickit.crm.user+11+9999999999.json",
            LandingFile("tickit.tickit.crm.user", 11, 9999999999),
        ),
        (
            "/data/landing/topics/tickit.ecomm.sale/partition=2/tickit.ecomm.sale+2+0000001000.avro",
            LandingFile("tickit.ecomm.sale", 2, 1000, "avro"),
        ),
        (
            "s3://bucket/cdc_hudi_data_lake/bronze/topics/tickit.ems.event/year=2026/month=11/day=22/"
            "tickit.ems.event+0+0000000000.avro",
            LandingFile("tickit.ems.event", 0, 0, "avro"),
        ),
    ],
)
def test_valid_paths(path, expected):
    assert parse_landing_path(path) == expected


@pytest.mark.parametrize(
    ("name", "file_format", "compression"),
    [
        ("tickit.ecomm.sale+0+0000000012.json.gz", "json", "gzip"),  # JsonFormat, s3.compression.type=gzip
        ("tickit.ecomm.sale+0+0000000012.bin", "json", None),  # ByteArrayFormat: JSON values, one per line
        ("tickit.ecomm.sale+0+0000000012.bin.gz", "json", "gzip"),
    ],
)
def test_every_sink_format_that_carries_json_is_read(name, file_format, compression):
    for folder in ("partition=0", "year=2026/month=11/day=22", "year=2026/month=11/day=22/hour=07"):
        parsed = parse_landing_path(f"topics/tickit.ecomm.sale/{folder}/{name}")
        assert (parsed.topic, parsed.partition, parsed.start_offset) == ("tickit.ecomm.sale", 0, 12)
        assert (parsed.format, parsed.compression) == (file_format, compression)


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("topics/tickit.ecomm.sale/partition=0/tickit.ecomm.sale+0+12.json", "10-digit"),
        ("topics/tickit.ecomm.sale/partition=0/tickit.ecomm.sale+0+0000000012.parquet",
         "unsupported landing format '.parquet'"),
        ("topics/tickit.ecomm.sale/partition=0/tickit.ecomm.sale+0+0000000012.json.snappy",
         "unsupported landing format '.json.snappy'"),
        ("topics/tickit.ecomm.sale/year=2026/month=11/day=22/hour=7/tickit.ecomm.sale+0+0000000012.json",
         "unexpected directories"),
        ("topics/tickit.ecomm.date/partition=0/tickit.ecomm.sale+0+0000000012.json", "not under topics/"),
        ("landing/tickit.ecomm.sale/tickit.ecomm.sale+0+0000000012.json", "not under topics/"),
        ("topics/tickit.ecomm.sale/partition=1/tickit.ecomm.sale+0+0000000012.json", "does not match"),
        ("topics/tickit.ecomm.sale/tmp/tickit.ecomm.sale+0+0000000012.json", "unexpected directories"),
    ],
)
def test_invalid_paths_name_the_problem(path, problem):
    """Each bad path fails naming itself and its problem (an unreadable format is an error too)."""
    with pytest.raises(LandingPathError, match=problem) as info:
        parse_landing_path(path)
    assert path in str(info.value)


def test_file_name_round_trip():
    name = landing_file_name("tickit.ecomm.sale", 3, 42)
    assert name == "tickit.ecomm.sale+3+0000000042.json"
    assert parse_landing_path(f"topics/tickit.ecomm.sale/partition=3/{name}") == LandingFile("tickit.ecomm.sale", 3, 42)
    avro = landing_file_name("tickit.ecomm.sale", 3, 42, "avro")
    assert avro == "tickit.ecomm.sale+3+0000000042.avro"
    assert parse_landing_path(f"topics/tickit.ecomm.sale/year=2026/month=01/day=02/{avro}").format == "avro"
