"""What a Kafka Connect S3 sink may write besides plain JSON lines, read or dead-lettered, never skipped.

The simulator's JSON landing is rewritten file by file into the sink's other layouts and
formats, keeping every record: gzip-compressed JSON (``s3.compression.type=gzip``:
``.json.gz``), the ByteArrayFormat (``.bin``: each value's bytes and the line separator;
Debezium JSON values through the ByteArrayConverter), and the HourlyPartitioner's
``year=/month=/day=/hour=`` folders. Bronze must still hold exactly the oracle's events
(judged by hudi-rs). Two planted files must each become one dead letter naming the file:
a ParquetFormat file (``unsupported_format``) and a damaged gzip archive (``bad_encoding``).
"""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

from tests.stream.conftest import ingest, simulate
from tests.stream.judge import compare_events, dead_letter_tuples_oracle, hudi_rows

PARQUET = "topics/tickit.ecomm.sale/partition=0/tickit.ecomm.sale+0+0000900000.parquet"
DAMAGED_GZIP = "topics/tickit.ecomm.listing/partition=0/tickit.ecomm.listing+0+0000900000.json.gz"


def _rewrite_as_the_sink_would(landing: Path) -> Counter:
    """Rewrite the landing's JSON files into other sink layouts; which rewrite each file got."""
    done: Counter = Counter()
    topics = landing / "topics"
    for path in sorted(topics.rglob("*.json")):
        topic = path.relative_to(topics).parts[0]
        if topic == "tickit.ecomm.sale":
            path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
            path.unlink()
            done["json.gz"] += 1
        elif topic == "tickit.ems.venue":
            path.rename(path.with_name(path.name.removesuffix(".json") + ".bin"))
            done["bin"] += 1
        elif topic == "tickit.crm.user":
            hourly = topics / topic / "year=2026" / "month=01" / "day=01" / "hour=07"
            hourly.mkdir(parents=True, exist_ok=True)
            path.rename(hourly / path.name)
            done["hourly"] += 1
    return done


def test_every_file_the_sink_writes_is_read_or_dead_lettered(tmp_path: Path, spark) -> None:
    landing = tmp_path / "landing"
    simulate(landing, fmt="envelope", scale=0.003, changes=400, inject_bad=0, seed=21)
    rewritten = _rewrite_as_the_sink_would(landing)
    assert rewritten["json.gz"] and rewritten["bin"] and rewritten["hourly"], rewritten
    parquet_bytes = b"PAR1\x00\x01\x02not a landing format the ingestion reads PAR1"
    (landing / PARQUET).write_bytes(parquet_bytes)
    damaged = gzip.compress(b'{"payload": null}\n')[:-9]  # truncated: no trailer
    (landing / DAMAGED_GZIP).write_bytes(damaged)

    run = ingest(spark, tmp_path, "unused")

    report = compare_events(run.lake, run.landing)
    assert all(expected > 0 for expected, _, _ in report.values()), report
    assert {table: m for table, (_, _, m) in report.items() if m} == {}, report
    assert dead_letter_tuples_oracle(run.landing) == Counter()  # nothing planted by the simulator
    dead_rows = hudi_rows(run.lake / "bronze" / "dead_letter")
    assert Counter(row["landing_file"] for row in dead_rows) == Counter({PARQUET: 1, DAMAGED_GZIP: 1})
    dead = {row["landing_file"]: row for row in dead_rows}
    assert dead[PARQUET]["reason"] == "unsupported_format"
    assert "unsupported landing format '.parquet'" in dead[PARQUET]["message"]
    assert dead[DAMAGED_GZIP]["reason"] == "bad_encoding"
    assert dead[DAMAGED_GZIP]["raw_is_base64"]  # the file's bytes, kept whole
