"""The schema-change policy in the parser: added columns, widened types, incompatible changes.

Events are a real Debezium MySQL snapshot event with its schema (JsonConverter,
``schemas.enable=true``) changed the way a source's DDL changes it: a column the contract
lacks, ``INT`` altered to ``BIGINT`` (Connect ``int32`` -> ``int64``), a string column
altered to an integer. Each expected value is read off the event and the contract written
out in the test, not off the code.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ingestion.cdc.contracts import Column, ContractError, TableContract, load_contracts
from ingestion.cdc.parser import BronzeEvent, DeadLetter, parse_line
from ingestion.cdc.schema_policy import EVOLVE, STRICT, common_type, widens
from ingestion.stream.hudi_tables import avro_spark_type
from tests.cdc.conftest import FIXTURES, INGESTED_AT

TOPIC = "dbserver1.inventory.products"


def _contract(columns: tuple[Column, ...], policy: str = EVOLVE) -> TableContract:
    return TableContract(name="products", system="inventory", connector="mysql", database="inventory", schema=None,
                         topics=(TOPIC,), primary_key=("id",), columns=columns, schema_changes=policy)


ALL = (Column("id", "int"), Column("name", "string"), Column("description", "string"), Column("weight", "double"))
WITHOUT_WEIGHT = ALL[:3]


def _event() -> dict:
    return json.loads((FIXTURES / "mysql" / "mysql_real_snapshot_with_schema.json").read_text())


def _retype(event: dict, column: str, connect_type: str, value: object) -> dict:
    """The event after ``ALTER TABLE ... MODIFY column``: its schema in ``before``/``after`` and its value."""
    changed = copy.deepcopy(event)
    for side in changed["schema"]["fields"]:
        if side["field"] in ("before", "after"):
            for field in side["fields"]:
                if field["field"] == column:
                    field["type"] = connect_type
    changed["payload"]["after"][column] = value
    return changed


def _parse(event: dict, contract: TableContract) -> BronzeEvent | DeadLetter:
    result = parse_line(json.dumps(event).encode(), topic=TOPIC, partition=0, offset=7, landing_file="f.json",
                        ingested_at=INGESTED_AT, contracts={TOPIC: contract})
    assert isinstance(result, BronzeEvent | DeadLetter), result
    return result


def test_an_added_column_lands_with_the_type_its_schema_gives() -> None:
    result = _parse(_event(), _contract(WITHOUT_WEIGHT))
    assert isinstance(result, BronzeEvent)
    assert result.added_values == {"weight": 3.140000104904175}
    assert result.column_types == {"weight": "double"}
    assert "weight" not in result.row


def test_an_added_column_without_a_schema_lands_as_its_json_text() -> None:
    plain = _event()["payload"]
    plain["after"]["tags"] = ["a", "b"]
    result = _parse(plain, _contract(ALL))
    assert isinstance(result, BronzeEvent)
    assert result.added_values == {"tags": '["a", "b"]'} and result.column_types == {"tags": "string"}


def test_int_widened_to_bigint_widens_the_column_and_keeps_a_value_beyond_int() -> None:
    result = _parse(_retype(_event(), "id", "int64", 5_000_000_000), _contract(ALL))
    assert isinstance(result, BronzeEvent)
    assert result.row["id"] == 5_000_000_000 and result.column_types == {"id": "bigint"}


def test_a_string_column_turned_integer_is_incompatible_and_names_the_column() -> None:
    result = _parse(_retype(_event(), "name", "int32", 7), _contract(ALL))
    assert isinstance(result, DeadLetter) and result.reason == "incompatible_schema"
    assert "'name'" in result.message and "int32" in result.message


@pytest.mark.parametrize("event", [_retype(_event(), "id", "int64", 5), _event()],
                         ids=["widened", "added"])
def test_strict_dead_letters_any_change_of_the_contract(event: dict) -> None:
    result = _parse(event, _contract(WITHOUT_WEIGHT if event == _event() else ALL, STRICT))
    assert isinstance(result, DeadLetter) and result.reason == "incompatible_schema", result
    assert json.loads(result.raw_line) == event  # kept whole, replayable


def test_strict_takes_events_that_match_the_contract() -> None:
    result = _parse(_event(), _contract(ALL, STRICT))
    assert isinstance(result, BronzeEvent) and result.column_types == {} and result.added_values == {}


def test_a_column_bronze_already_added_keeps_its_type() -> None:
    bronze = (*((c.name, c.type) for c in WITHOUT_WEIGHT), *_contract(()).bronze_columns, ("weight", "double"))
    evolved = _contract(WITHOUT_WEIGHT).with_bronze_schema(bronze)
    assert evolved.evolved == (Column("weight", "double"),)
    assert _parse(_event(), evolved).column_types == {"weight": "double"}
    as_text = _retype(_event(), "weight", "string", "heavy")
    dead = _parse(as_text, evolved)
    assert isinstance(dead, DeadLetter) and dead.reason == "incompatible_schema" and "'weight'" in dead.message
    plain = _event()["payload"]
    plain["after"]["weight"] = "heavy"
    dead = _parse(plain, evolved)
    assert isinstance(dead, DeadLetter) and dead.reason == "type_mismatch"


def test_a_text_column_bronze_already_added_takes_any_value_as_text() -> None:
    bronze = (*((c.name, c.type) for c in WITHOUT_WEIGHT), ("weight", "string"))
    evolved = _contract(WITHOUT_WEIGHT).with_bronze_schema(bronze)
    result = _parse(_event(), evolved)
    assert isinstance(result, BronzeEvent)
    assert result.added_values == {"weight": "3.140000104904175"} and result.column_types == {"weight": "string"}


def test_with_bronze_schema_takes_widened_types_and_ignores_other_ones() -> None:
    bronze = (("id", "bigint"), ("name", "int"), ("description", "string"), ("weight", "double"), ("_cdc_op", "string"),
              ("vip", "boolean"))
    evolved = _contract(ALL).with_bronze_schema(bronze)
    assert [c.type for c in evolved.columns] == ["bigint", "string", "string", "double"]
    assert evolved.evolved == (Column("vip", "boolean"),)
    assert [name for name, _ in evolved.bronze_columns][-2:] == ["_cdc_source_date", "vip"]


def test_widening_rules() -> None:
    assert widens("int", "bigint") and not widens("bigint", "int") and not widens("string", "int")
    assert common_type("int", "bigint") == common_type("bigint", "int") == "bigint"
    assert common_type("boolean", "string") == common_type("int", "double") == "string"
    assert common_type("date", "date") == "date"


@pytest.mark.parametrize(("avro", "spark"), [
    (["null", "int"], "int"), ("long", "bigint"), (["null", {"type": "int", "logicalType": "date"}], "date"),
    ({"type": "long", "logicalType": "timestamp-micros"}, "timestamp"),
    ({"type": "fixed", "name": "f", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2}, "decimal(10,2)"),
    (["null", "string", "int"], None), ({"type": "array", "items": "int"}, None),
])
def test_bronze_types_read_back_from_a_hudi_writer_schema(avro: object, spark: str | None) -> None:
    assert avro_spark_type(avro) == spark


def test_the_policy_is_read_per_file_and_per_table(tmp_path: Path) -> None:
    (tmp_path / "s.yml").write_text(
        "system: s\nconnector: mysql\nschema_changes: strict\ntables:\n"
        "  a: {topics: [t.a], primary_key: [id], columns: [{name: id, type: int}]}\n"
        "  b: {topics: [t.b], primary_key: [id], schema_changes: evolve, columns: [{name: id, type: int}]}\n")
    contracts = load_contracts(tmp_path)
    assert (contracts["a"].schema_changes, contracts["b"].schema_changes) == (STRICT, EVOLVE)
    assert {c.schema_changes for c in load_contracts().values()} == {EVOLVE}  # the project's default
    (tmp_path / "s.yml").write_text("system: s\nconnector: mysql\nschema_changes: lenient\ntables: {}\n")
    with pytest.raises(ContractError, match="schema_changes: must be one of evolve, strict, got 'lenient'"):
        load_contracts.__wrapped__(tmp_path)


def _retyped_decimal(event: dict, column: str, precision: int, scale: int, value: str) -> dict:
    """The event after ``ALTER TABLE ... MODIFY column DECIMAL(precision, scale)``: Connect's Decimal
    (``decimal.handling.mode=precise``: base64 of the unscaled big-endian two's complement)."""
    import base64
    from decimal import Decimal

    changed = copy.deepcopy(event)
    for side in changed["schema"]["fields"]:
        if side["field"] in ("before", "after"):
            for field in side["fields"]:
                if field["field"] == column:
                    field.update(type="bytes", name="org.apache.kafka.connect.data.Decimal", version=1,
                                 parameters={"scale": str(scale), "connect.decimal.precision": str(precision)})
    unscaled = int(Decimal(value).scaleb(scale))
    raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)
    changed["payload"]["after"][column] = base64.b64encode(raw).decode()
    return changed


def test_a_decimal_widened_at_the_same_scale_widens_the_column_and_keeps_a_wider_value() -> None:
    from decimal import Decimal

    narrow = (*ALL[:3], Column("weight", "decimal(5,2)"))
    result = _parse(_retyped_decimal(_event(), "weight", 10, 2, "12345678.90"), _contract(narrow))
    assert isinstance(result, BronzeEvent)
    assert result.row["weight"] == Decimal("12345678.90") and result.column_types == {"weight": "decimal(10,2)"}
    # the same event under strict: the contract's decimal(5,2) cannot hold it
    strict = _parse(_retyped_decimal(_event(), "weight", 10, 2, "12345678.90"), _contract(narrow, STRICT))
    assert isinstance(strict, DeadLetter)


@pytest.mark.parametrize(("current", "incoming", "widened"), [
    ("decimal(8,2)", "decimal(10,2)", True), ("decimal(10,2)", "decimal(8,2)", False),
    ("decimal(8,2)", "decimal(10,3)", False), ("decimal(8,2)", "decimal(39,2)", False), ("int", "bigint", True),
    ("bigint", "int", False), ("int", "string", False)])
def test_what_widens(current: str, incoming: str, widened: bool) -> None:
    assert widens(current, incoming) is widened
