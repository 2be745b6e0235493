"""``lakehouse metastore start|status|stop``: a Hive Metastore on PostgreSQL of its own home, on loopback.

The schema is Hive's own (its schema tool), read back from PostgreSQL; a second start reuses the
running service, a restart after ``lakehouse down`` keeps the schema and creates nothing again.
Clients reading and writing through it: tests/cluster/test_metastore.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from lakehouse.config import load_settings
from lakehouse.services import databases, metastore, registry
from lakehouse.services.ports import free_port
from tests.security.listening_sockets import assert_loopback_only, process_tree

LAKEHOUSE = os.path.join(os.path.dirname(sys.executable), "lakehouse")
NO_POSTGRESQL = not list(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


def _metastore_db(settings, query: str) -> list[tuple]:
    directory = metastore.metastore_dir(settings)
    with psycopg.connect(host="127.0.0.1", port=int((directory / "metastore-db.port").read_text()),
                         user="lakehouse", password=(directory / "metastore-db.password").read_text().strip(),
                         dbname="metastore") as conn:
        return conn.execute(query).fetchall()


def _schema_version(settings) -> list[tuple]:
    return _metastore_db(settings, 'select "SCHEMA_VERSION" from "VERSION"')


@pytest.mark.skipif(NO_POSTGRESQL, reason="PostgreSQL is not installed (set-up with LAKEHOUSE_SKIP_SOURCES=1)")
def test_metastore_starts_on_loopback_with_hives_schema_and_stops_by_pid(tmp_path, monkeypatch) -> None:
    port = free_port()
    env = {**os.environ, "LAKEHOUSE_HOME": str(tmp_path), "LAKEHOUSE_METASTORE_PORT": str(port)}
    env.pop("LAKEHOUSE_METASTORE_URI", None)
    monkeypatch.setenv("LAKEHOUSE_HOME", str(tmp_path))
    monkeypatch.setenv("LAKEHOUSE_METASTORE_PORT", str(port))
    settings = load_settings()

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([LAKEHOUSE, *args], env=env, capture_output=True, text=True, timeout=300)

    try:
        started = run("metastore", "start")
        assert started.returncode == 0, started.stderr[-3000:]
        assert f"export LAKEHOUSE_METASTORE_URI=thrift://127.0.0.1:{port}" in started.stdout, started.stdout
        first = registry.read(settings, metastore.SERVICE)
        assert first is not None and first.alive
        for name in (metastore.SERVICE, metastore.DATABASE_SERVICE):
            assert_loopback_only(process_tree(registry.read(settings, name).pid), name)
        assert _schema_version(settings) == [("4.0.0",)]
        assert (metastore.metastore_dir(settings) / "conf" / "metastore-site.xml").stat().st_mode & 0o077 == 0
        assert (metastore.metastore_dir(settings) / "metastore-db.password").stat().st_mode & 0o077 == 0
        # the catalog's database survives a power cut: PostgreSQL's own durability settings are on
        assert _metastore_db(settings, "select name, setting from pg_settings where name in "
                                       "('fsync', 'full_page_writes') order by name") == [
            ("fsync", "on"), ("full_page_writes", "on")]

        again = run("metastore", "start")  # idempotent: the same process
        assert again.returncode == 0 and registry.read(settings, metastore.SERVICE) == first
        status = run("metastore", "status")
        assert status.returncode == 0 and f"thrift://127.0.0.1:{port} (pid {first.pid}" in status.stdout

        down = run("down")
        assert f"metastore: stopped pid {first.pid}" in down.stdout, down.stdout
        assert "metastore-db: stopped pid" in down.stdout
        assert not first.alive
        stopped = run("metastore", "status")
        assert stopped.returncode == 1 and "not running" in stopped.stdout

        restarted = run("metastore", "start")  # the schema is there: not created again
        assert restarted.returncode == 0, restarted.stderr[-3000:]
        assert _schema_version(settings) == [("4.0.0",)]

        data = databases.postgres_data_dir(settings, metastore.metastore_dir(settings), metastore.DATABASE_SERVICE)
        assert (data / "PG_VERSION").exists()
        second = registry.read(settings, metastore.SERVICE)
        discarded = run("down", "--discard")
        assert discarded.returncode == 0, discarded.stderr[-3000:]
        assert f"metastore: stopped pid {second.pid}" in discarded.stdout, discarded.stdout
        if not data.is_relative_to(tmp_path):  # kept outside the home (as root): removed with it
            assert not data.exists()
    finally:
        metastore.stop(settings)
        metastore.discard(settings)
    assert not metastore.status(settings).running
