"""A table nobody declared, from its first event to silver, in a copy of the project (slow).

Debezium events of PostgreSQL's ``customers`` (real event shapes, positions renumbered)
land before the table has a contract: the ingestion dead-letters them as
``unknown_topic``, losing nothing. ``lakehouse tables add`` onboards the table from the
event with its schema; the next ingestion creates ``bronze.customers``,
``dead-letter replay`` lands the held events, and ``dbt build --select +customers`` builds
silver. The oracle is the events replayed in plain Python (last change per key wins, a
delete removes the key), read back through the Thrift server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.onboarding.test_tables_add import EVENT, ROOT, copy_project

pytestmark = pytest.mark.slow

TOPIC = "PostgreSQL_server.public.customers"
DBT = Path(sys.executable).with_name("dbt")


def _events() -> list[dict]:
    """create 1, create 2, update 1, delete 2 (envelopes as Debezium writes them, lsn increasing)."""
    fixtures = ROOT / "tests" / "fixtures" / "debezium" / "postgres"
    create = json.loads(EVENT.read_text())["payload"]
    update = json.loads((fixtures / "pg_docs_update.json").read_text())["payload"]
    delete = json.loads((fixtures / "pg_docs_delete.json").read_text())["payload"]
    second = json.loads(json.dumps(create))
    second["after"] = {**create["after"], "id": 2, "first_name": "Bo", "email": "bo@example.com"}
    gone = json.loads(json.dumps(delete))
    gone["before"] = {"id": 2}
    events = [create, second, update, gone]
    for lsn, event in enumerate(events, start=24_100_000):
        event["source"] = {**event["source"], "lsn": lsn, "txId": lsn, "sequence": None}
    return events


def _oracle(events: list[dict]) -> dict[int, tuple]:
    rows: dict[int, tuple] = {}
    for event in events:
        if event["op"] == "d":
            rows.pop(event["before"]["id"], None)
        else:
            after = event["after"]
            rows[after["id"]] = (after["id"], after["first_name"], after["last_name"], after["email"])
    return rows


def _lakehouse(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """The copy's own `lakehouse` (its contracts, its models): run from its root."""
    done = subprocess.run([sys.executable, "-c", "import sys; from lakehouse.cli import main; sys.exit(main())", *args],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"lakehouse {' '.join(args)}:\n{(done.stdout + done.stderr)[-3000:]}"
    return done


def test_an_undeclared_table_reaches_silver_through_tables_add(tmp_path, thrift_server) -> None:
    project = copy_project(tmp_path / "project")
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    folder = landing / "topics" / TOPIC / "partition=0"
    folder.mkdir(parents=True)
    events = _events()
    (folder / f"{TOPIC}+0+0000000000.json").write_text("".join(json.dumps(e) + "\n" for e in events))
    env = {**os.environ, **thrift_server.env, "LAKEHOUSE_HOME": str(tmp_path / "home"),
           "LAKEHOUSE_JVM_LIB": str(ROOT / "jvm" / "lib"), "LAKEHOUSE_LANDING": str(landing),
           "LAKEHOUSE_LAKE": str(lake), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    env.pop("LAKEHOUSE_DBT_TARGET", None)

    _lakehouse(project, env, "ingest", "--once", "--quiet")
    held = _lakehouse(project, env, "dead-letter", "list", "--reason", "unknown_topic").stdout
    assert held.count(f"{TOPIC}[0]@") == len(events), held

    _lakehouse(project, env, "tables", "add", "--system", "ems", "--from-event", str(EVENT), "--primary-key", "id",
               "--project-dir", str(project))
    _lakehouse(project, env, "ingest", "--once", "--quiet")  # creates and registers bronze.customers
    _lakehouse(project, env, "dead-letter", "replay", "--reason", "unknown_topic")
    _lakehouse(project, env, "sync")

    work = tmp_path / "dbt"
    build = subprocess.run(
        # cautious: the singular tests over every entity need the other tables' models, not built here
        [str(DBT), "build", "--select", "+customers", "--indirect-selection", "cautious", "--project-dir",
         str(project), "--profiles-dir", str(project / "profiles"), "--target-path", str(work / "target"),
         "--log-path", str(work / "logs")],
        cwd=project, env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert build.returncode == 0, (build.stdout + build.stderr)[-4000:]
    got = thrift_server.sql("select id, first_name, last_name, email from silver.customers")
    assert {row[0]: tuple(row) for row in got} == _oracle(events)
