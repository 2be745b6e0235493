"""The warm-dbt client: `python -m ingestion.dbt_warm.client <dbt args>` behaves as `dbt <dbt args>`.

It hands the command to the warm server of $LAKEHOUSE_HOME (package docstring) and exits with
the exit status of the dbt child that ran it. When no server is ready it replaces itself with
the `dbt` executable (os.execv: same process, same arguments, same environment) and, if no
server is running, starts one in the background for the next command. No third-party imports
(the standard library and the dependency-free `ingestion.config`): this process must start in
milliseconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

from ingestion import dbt_warm
from ingestion.config import PROJECT_DIR
from ingestion.dbt_warm import wire

#: Signals a user or a job runner sends to stop dbt; the client passes them on to the child.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_plain(argv: list[str]) -> NoReturn:
    """Become the `dbt` executable (the cold path)."""
    executable = dbt_warm.dbt_executable()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(executable, [executable, *argv])


def server_running(home: Path) -> bool:
    """True while a server (warming up or serving) holds the home's lock."""
    try:
        dbt_warm.run_dir(home).mkdir(parents=True, exist_ok=True)
        with open(dbt_warm.lock_path(home), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(lock, fcntl.LOCK_UN)
            return False
    except OSError:
        return True  # cannot tell (e.g. unwritable run dir): do not start another


def start_server(home: Path) -> None:
    """Start the home's server in its own session (so a job's process-group kill spares it)."""
    log = dbt_warm.log_path(home)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as output:
        subprocess.Popen(  # noqa: S603 - this interpreter, this package
            [sys.executable, "-m", "ingestion.dbt_warm.server"],
            stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True,
            cwd=str(PROJECT_DIR), env=os.environ.copy(),
        )


def connect(home: Path) -> socket.socket | None:
    if not dbt_warm.socket_path_fits(home):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(dbt_warm.socket_path(home)))
    except OSError:
        sock.close()
        return None
    return sock


def run_warm(sock: socket.socket, argv: list[str]) -> int | None:
    """Send the command; its exit status, or None when the server declined it (stale code)."""
    child_pid: int | None = None
    pending: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if child_pid is None:
            pending.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(child_pid, signum)
        if signum != signal.SIGINT:
            # die of the same signal, as a plain dbt would (the child gets it too)
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    umask = os.umask(0o022)
    os.umask(umask)
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask, "python": sys.executable}
    wire.send(sock, request, fds=[0, 1, 2])
    reader = wire.Reader(sock)
    first = reader.receive()
    if first is None or first.get("stale") or "error" in (first or {}):
        return None
    child_pid = int(first["pid"])
    # from here on the command is running: whatever happens, never run it a second time
    for signum in pending:
        forward(signum, None)
    try:
        result = reader.receive()
    except (OSError, wire.WireError):
        result = None
    if result is None or "exit" not in result:
        print(f"dbt (warm child {child_pid}) ended without reporting an exit status", file=sys.stderr)
        return 1
    return int(result["exit"])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    home_text = os.environ.get("LAKEHOUSE_HOME")
    if not home_text or not dbt_warm.enabled():
        run_plain(argv)
    home = Path(home_text)
    sock = connect(home)
    if sock is None:
        if dbt_warm.socket_path_fits(home) and not server_running(home):
            start_server(home)
        run_plain(argv)
    try:
        code = run_warm(sock, argv)
    except (OSError, wire.WireError, ValueError):
        code = None  # the request never reached a child: nothing ran yet
    finally:
        sock.close()
    if code is None:
        start_server(home)  # replaces the stale server once it has exited (it waits for the lock)
        run_plain(argv)
    return code


if __name__ == "__main__":
    sys.exit(main())
