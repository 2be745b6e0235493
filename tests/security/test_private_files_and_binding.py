"""Trust on one machine: password files are born private; a server binds beyond loopback only when asked."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lakehouse.services import thrift
from lakehouse.services.private_file import write_private

LAKEHOUSE = str(Path(sys.executable).with_name("lakehouse"))


def test_a_private_file_is_never_readable_by_others_not_even_while_written(tmp_path: Path) -> None:
    target = tmp_path / "db.password"
    target.write_text("old\n")
    target.chmod(0o644)  # a file of an older version: replaced, not rewritten in place
    write_private(target, "secret-0\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    modes: set[int] = set()
    done = threading.Event()

    def watch() -> None:  # the group/other bits of every file of the directory while writes go on
        while not done.is_set():
            for path in tmp_path.iterdir():
                with contextlib.suppress(FileNotFoundError):
                    modes.add(stat.S_IMODE(path.stat().st_mode) & 0o077)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for round_ in range(1, 200):
            write_private(target, f"secret-{round_}\n")
    finally:
        done.set()
        watcher.join()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text() == "secret-199\n"
    assert modes == {0}, f"a file was readable by group or others: {sorted(modes)}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.password"]


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_binds_need_no_flag(host: str) -> None:
    thrift.check_bind_host(host, allow_remote=False)


def test_a_bind_beyond_loopback_is_refused_unless_asked_then_warned(capsys, monkeypatch) -> None:
    monkeypatch.delenv("LAKEHOUSE_ALLOW_REMOTE_BIND", raising=False)
    for host in ("0.0.0.0", "::", "10.1.2.3", "lakehouse.example.org"):
        with pytest.raises(thrift.ThriftError, match=f"refusing to bind the Thrift server to {host}"):
            thrift.check_bind_host(host, allow_remote=False)
    thrift.check_bind_host("0.0.0.0", allow_remote=True)
    assert "warning: the Thrift server binds 0.0.0.0" in capsys.readouterr().err


def test_the_cli_refuses_a_wildcard_bind_before_starting_anything(tmp_path: Path) -> None:
    env = {**os.environ, "LAKEHOUSE_HOME": str(tmp_path)}
    env.pop("LAKEHOUSE_ALLOW_REMOTE_BIND", None)
    done = subprocess.run([LAKEHOUSE, "thrift", "start", "--host", "0.0.0.0", "--port", "1"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "refusing to bind the Thrift server to 0.0.0.0" in done.stderr
    assert "--allow-remote" in done.stderr
    assert not (tmp_path / "run").exists() or not list((tmp_path / "run").iterdir())  # nothing was started
