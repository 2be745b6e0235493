"""The warm dbt runner (ingestion/dbt_warm): the same results as the `dbt` executable, sooner.

Each test checks the warm path against the plain `dbt` executable run the same way (the
oracle), and that the server is really what ran the command (its log names every child).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingestion import dbt_warm, services
from ingestion.config import PROJECT_DIR
from tests.conftest import settings_for

CLIENT = [sys.executable, "-m", "ingestion.dbt_warm.client"]
DBT = [str(Path(sys.executable).with_name("dbt"))]
#: run-operation arguments of a query that takes a minute without using the server's CPU
SLEEP_60_S = "{sql: \"select reflect('java.lang.Thread', 'sleep', cast(60000 as bigint))\"}"


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "LAKEHOUSE_HOME": str(home), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
           "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"), "LAKEHOUSE_THRIFT_PORT": "9",
           dbt_warm.SWITCH: "1", dbt_warm.IDLE_SWITCH: "5"}
    env.update(extra)
    return env


def run(program: list[str], home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*program, *args], capture_output=True, text=True, cwd=PROJECT_DIR,
                          env=environment(home, **extra), timeout=300)


def server_log(home: Path) -> str:
    path = dbt_warm.log_path(home)
    return path.read_text() if path.exists() else ""


def wait_until(condition, timeout: float = 120.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def warm_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home whose warm server is up: the first command starts it (and runs plain)."""
    home = tmp_path_factory.mktemp("warm")
    first = run(CLIENT, home, "ls", "-s", "tag:silver", "-q")
    assert first.returncode == 0, first.stderr
    wait_until(lambda: "serving on" in server_log(home), what="the warm server")
    yield home
    services.stop(settings_for(home, 9), dbt_warm.SERVICE)


def children(home: Path) -> int:
    return server_log(home).count(": dbt ")


def test_a_command_runs_in_a_warm_child_with_the_output_and_status_of_plain_dbt(warm_home: Path) -> None:
    before = children(warm_home)
    target = ["--target-path", str(warm_home / "t"), "--log-path", str(warm_home / "l")]
    listing = ["ls", "-s", "tag:silver", "--resource-type", "model", "--output", "json", "-q"]
    warm = run(CLIENT, warm_home, *listing, *target)
    plain = run(DBT, warm_home, *listing, *target)
    assert children(warm_home) == before + 1
    assert (warm.returncode, warm.stderr) == (plain.returncode, plain.stderr) == (0, "")
    assert warm.stdout == plain.stdout
    assert len(warm.stdout.splitlines()) == 14 and '"unique_id": "model.tickit_lakehouse.users"' in warm.stdout

    # a failing command: the same exit status and message
    warm = run(CLIENT, warm_home, "run-operation", "no_such_macro", *target)
    plain = run(DBT, warm_home, "run-operation", "no_such_macro", *target)
    assert children(warm_home) == before + 2
    assert warm.returncode == plain.returncode != 0
    assert "no_such_macro" in warm.stdout + warm.stderr


def test_each_child_gets_the_environment_and_directory_of_its_client(warm_home: Path, tmp_path: Path) -> None:
    before = children(warm_home)
    for name, umask in (("a", 0o022), ("b", 0o077)):
        result = subprocess.run(
            [*CLIENT, "parse", "--project-dir", str(PROJECT_DIR), "-q"], capture_output=True, text=True,
            cwd=tmp_path, env=environment(warm_home, DBT_TARGET_PATH=str(tmp_path / name)), timeout=300,
            umask=umask,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert (tmp_path / name / "manifest.json").stat().st_mode & 0o777 == 0o666 & ~umask
    assert children(warm_home) == before + 2


def test_changed_code_on_disk_makes_the_server_hand_over(warm_home: Path) -> None:
    """A server whose modules changed on disk declines the command (it runs plain) and exits."""
    module = Path(dbt_warm.__file__).with_name("wire.py")
    stamp = module.stat()
    pid = services.read(settings_for(warm_home, 9), dbt_warm.SERVICE).pid
    before = children(warm_home)
    os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    try:
        result = run(CLIENT, warm_home, "ls", "-s", "tag:silver", "-q")
    finally:
        os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert result.returncode == 0 and "silver" in result.stdout
    assert children(warm_home) == before  # not served by the stale server
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 30, "the stale server to exit")
    # the client started a fresh one, which serves the next command
    wait_until(lambda: server_log(warm_home).count("serving on") >= 2, what="a fresh server")
    before = children(warm_home)
    assert run(CLIENT, warm_home, "ls", "-s", "tag:silver", "-q").returncode == 0
    assert children(warm_home) == before + 1


def test_switched_off_it_never_starts_a_server(tmp_path: Path) -> None:
    result = run(CLIENT, tmp_path, "ls", "-s", "tag:silver", "-q", **{dbt_warm.SWITCH: "0"})
    assert result.returncode == 0 and "silver" in result.stdout
    time.sleep(1)
    assert not dbt_warm.log_path(tmp_path).exists()
    assert not dbt_warm.socket_path(tmp_path).exists()


def test_an_idle_server_exits_by_itself(tmp_path: Path) -> None:
    assert run(CLIENT, tmp_path, "ls", "-q", **{dbt_warm.IDLE_SWITCH: "0.05"}).returncode == 0
    wait_until(lambda: "serving on" in server_log(tmp_path), what="the warm server")
    wait_until(lambda: "exiting: idle" in server_log(tmp_path), 60, "the idle exit")
    wait_until(lambda: not dbt_warm.socket_path(tmp_path).exists(), 10, "the socket to go")


def test_a_killed_client_takes_its_child_down(warm_home: Path, thrift_server) -> None:
    """SIGKILL cannot be forwarded: the child notices its client is gone and stops itself."""
    env = {**thrift_server.env, "LAKEHOUSE_HOME": str(warm_home)}
    before = children(warm_home)
    client = subprocess.Popen(
        [*CLIENT, "run-operation", "run_query", "--args", SLEEP_60_S,
         "--target-path", str(warm_home / "t"), "--log-path", str(warm_home / "l")],
        cwd=PROJECT_DIR, env=environment(warm_home, **env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: children(warm_home) == before + 1, 60, "the child to start")
    child = int(server_log(warm_home).rsplit("child ", 1)[1].split(":", 1)[0])
    time.sleep(3)
    assert os.path.exists(f"/proc/{child}") and client.poll() is None  # the query (a 60 s sleep) still runs
    client.send_signal(signal.SIGKILL)
    client.wait()
    wait_until(lambda: not os.path.exists(f"/proc/{child}"), 40, "the orphaned child to stop")
