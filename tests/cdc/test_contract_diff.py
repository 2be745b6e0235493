"""`contracts diff`: what schema-carrying events say about a table against what its contract says.

The contracts compared here are written out by hand in each test (or are the project's own,
for events the simulator writes with their schema), so every expected difference is read
off the two documents, not off the code.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

from ingestion.cdc.contract_diff import contract_differences
from ingestion.cdc.contract_generator import table_from_event
from ingestion.cdc.contracts import load_contracts
from tests.stream.conftest import simulate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "debezium"
LAKEHOUSE = str(Path(sys.executable).parent / "lakehouse")
PRODUCTS = """system: inventory
connector: mysql
database: inventory
tables:
  products:
    topics: [dbserver1.inventory.products]
    primary_key: [{key}]
    columns:
{columns}
"""


def _contract(tmp_path: Path, columns: list[tuple[str, str]], key: str = "id"):
    lines = "".join(f"      - {{name: {name}, type: {kind}}}\n" for name, kind in columns)
    (tmp_path / "inventory.yml").write_text(PRODUCTS.format(key=key, columns=lines))
    return load_contracts(tmp_path)["products"]


def _products_event() -> dict:
    return json.loads((FIXTURES / "mysql" / "mysql_real_snapshot_with_schema.json").read_text())


def test_events_as_the_contract_says_have_no_differences(tmp_path) -> None:
    contract = _contract(tmp_path, [("id", "int"), ("name", "string"), ("description", "string"),
                                    ("weight", "double")])
    assert contract_differences(contract, table_from_event(_products_event(), primary_key=["id"])) == []


def test_added_dropped_retyped_columns_and_another_key_are_each_named(tmp_path) -> None:
    contract = _contract(tmp_path, [("id", "int"), ("name", "int"), ("description", "string"), ("sku", "string")],
                         key="name")
    lines = [d.line() for d in contract_differences(contract, table_from_event(_products_event(),
                                                                                 primary_key=["id"]))]
    assert lines == [
        "- sku string  (in the contract, not in the events)",
        "~ name int -> string",
        "+ weight double  (in the events, not in the contract)",
        "primary key (name) -> (id)",
    ]


def _wrapped_venue_event(tmp_path: Path) -> dict:
    """A `venue` event the simulator wrote with its schema (JsonConverter schemas.enable=true)."""
    landing = tmp_path / "landing"
    simulate(landing, fmt="mixed", scale=0.001, changes=200, inject_bad=0)
    for path in sorted((landing / "topics" / "tickit.ems.venue").rglob("*.json")):
        for line in path.read_bytes().splitlines():
            if line.startswith(b'{"schema"'):
                return json.loads(line)
    raise AssertionError("the simulator wrote no venue event with its schema")


def test_the_cli_reports_a_column_added_at_the_source(tmp_path) -> None:
    event = _wrapped_venue_event(tmp_path)
    same, added = tmp_path / "same.json", tmp_path / "added.json"
    same.write_text(json.dumps(event))
    changed = copy.deepcopy(event)
    after = next(f for f in changed["schema"]["fields"] if f["field"] == "after")
    after["fields"].append({"type": "string", "optional": True, "field": "venuewebsite"})
    changed["payload"]["after"]["venuewebsite"] = "https://example.com"
    added.write_text(json.dumps(changed))

    done = subprocess.run([LAKEHOUSE, "contracts", "diff", "--from-event", str(same)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "venue (tickit.ems.venue): as the contract says"
    done = subprocess.run([LAKEHOUSE, "contracts", "diff", "--from-event", str(added)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "venue (tickit.ems.venue): 1 difference(s)",
        "  + venuewebsite string  (in the events, not in the contract)",
    ]
    assert load_contracts()["venue"].primary_key == ("venueid",)  # the key came from the contract
