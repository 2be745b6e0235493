"""Key and partition-path rendering against values Java Hudi produces (literals from Java semantics)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from ingestion.hoodie import HoodieError, TableConfig
from ingestion.hoodie.keys import partition_paths, record_keys


def test_values_render_as_java_does():
    table = pa.table({
        "d": pa.array([1.0, 1e10, 0.1, 1e-5, -2.5e-7, 123456789.0]),
        "n": pa.array([decimal.Decimal("12.50"), decimal.Decimal("-0.01"), None, None, None, None],
                      pa.decimal128(8, 2)),
        "b": pa.array([True, False, None, None, None, None]),
        "day": pa.array([dt.date(2024, 1, 2)] * 6),
        "ts": pa.array([dt.datetime(1970, 1, 1, 0, 0, 1)] * 6, pa.timestamp("us")),
    })
    keys = record_keys(table, TableConfig(name="t", record_key_fields=("d", "n", "b", "day", "ts"))).to_pylist()
    assert keys[0] == "d:1.0,n:12.50,b:true,day:2024-01-02,ts:1000000"
    assert keys[1] == "d:1.0E10,n:-0.01,b:false,day:2024-01-02,ts:1000000"
    assert [k.split(",")[0] for k in keys[2:]] == ["d:0.1", "d:1.0E-5", "d:-2.5E-7", "d:1.23456789E8"]
    assert keys[2].split(",")[1:3] == ["n:__null__", "b:__null__"]


def test_partition_paths_hive_plain_and_url_encoded():
    table = pa.table({"id": [1, 2, 3], "region": ["a/b", "", None], "day": ["x:y", "d", "d"]})
    hive = TableConfig(name="t", record_key_fields=("id",), partition_fields=("region", "day"))
    assert partition_paths(table, hive).to_pylist() == [
        "region=a/b/day=x:y", "region=__HIVE_DEFAULT_PARTITION__/day=d", "region=__HIVE_DEFAULT_PARTITION__/day=d"]
    encoded = TableConfig(name="t", record_key_fields=("id",), partition_fields=("region", "day"), url_encode=True)
    assert partition_paths(table, encoded).to_pylist()[0] == "region=a%2Fb/day=x%3Ay"
    plain = TableConfig(name="t", record_key_fields=("id",), partition_fields=("day",), hive_style=False)
    assert partition_paths(table, plain).to_pylist() == ["x:y", "d", "d"]
    assert plain.keygen_class.endswith("SimpleKeyGenerator")


def test_simple_keys_refuse_nulls_and_complex_keys_refuse_all_null():
    with pytest.raises(HoodieError, match="null or empty in 1 row"):
        record_keys(pa.table({"id": [1, None]}), TableConfig(name="t", record_key_fields=("id",)))
    with pytest.raises(HoodieError, match="all null"):
        record_keys(pa.table({"a": pa.array([None], pa.int32()), "b": pa.array([None], pa.string())}),
                    TableConfig(name="t", record_key_fields=("a", "b")))
