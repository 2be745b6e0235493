"""PostgreSQL's data kept outside a home belongs to that home alone, made again or not.

As root under a home PostgreSQL's user cannot enter (pytest's private temporary directories),
a server's data lives under ``/var/tmp/lakehouse-postgres``. A home deleted and made again at
the same path (pytest hands out the same directory names in every run) once met the data its
predecessor left there, with the old password: "password authentication failed".
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import psycopg
import pytest

from lakehouse.config import load_settings
from lakehouse.services import databases, registry

NO_POSTGRESQL = not list(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


@pytest.mark.skipif(NO_POSTGRESQL, reason="PostgreSQL is not installed (set-up with LAKEHOUSE_SKIP_SOURCES=1)")
@pytest.mark.skipif(os.geteuid() != 0, reason="the data stays inside the home unless PostgreSQL runs as another user")
def test_a_home_made_again_at_the_same_path_gets_its_own_postgresql_data(tmp_path, monkeypatch) -> None:
    home = tmp_path / "home"  # under pytest's mode-700 directory: the postgres user cannot enter it
    monkeypatch.setenv("LAKEHOUSE_HOME", str(home))
    settings = load_settings()
    root, name = home / "store", "store-db"
    left_behind: list[Path] = []
    try:
        first = databases.start_postgres(settings, root=root, name=name, database="first")
        left_behind.append(first.data_dir.parent)
        assert not first.data_dir.is_relative_to(home), first.data_dir
        registry.stop(settings, name)
        shutil.rmtree(home)  # the home goes, as 'rm -rf' takes it; its data outside stays
        assert (first.data_dir / "PG_VERSION").exists()

        second = databases.start_postgres(settings, root=root, name=name, database="second")
        left_behind.append(second.data_dir.parent)
        assert second.data_dir != first.data_dir
        with psycopg.connect(host=second.host, port=second.port, user=second.user, password=second.password,
                             dbname="second") as conn:
            assert conn.execute("select current_database()").fetchone() == ("second",)
        registry.stop(settings, name)
        databases.discard(settings, root, name)
        assert not second.data_dir.exists()
    finally:
        registry.stop(settings, name)
        for directory in left_behind:
            shutil.rmtree(directory, ignore_errors=True)
