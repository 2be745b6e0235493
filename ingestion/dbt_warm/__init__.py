"""A warm dbt: one long-lived process that has imported dbt, forking a fresh child per command.

Every `dbt` command pays ~1.4 s before it does any work: importing dbt, then building the
(de)serialisers and JSON schemas of its artifact classes and compiling its Jinja macros, all
of which dbt caches per process. For a `dbt run -s tag:silver` with a few changed keys that
is a third of the command. `lakehouse dbt` (and the scheduled jobs, the demo and the docs
commands, through `ingestion.dbt_runner`) send each command to a warm server instead:

- the server (`server.py`, one per LAKEHOUSE_HOME, started on first use) imports dbt and runs
  one `dbt parse` of the project into a scratch directory, so those caches are filled;
- for each command it forks: the child is a fresh process (memory copied on write) that takes
  over the client's stdin/stdout/stderr, working directory, environment and arguments and runs
  dbt's own command-line entry point, exactly as the `dbt` executable does. Nothing runs twice
  in one process, so no state carries from one command to the next except those caches;
- the client (`client.py`, no third-party imports) forwards SIGINT/SIGTERM/SIGHUP to the child
  and exits with its exit code; a child whose client disappears (SIGKILL) stops itself.

Whenever the warm path is not ready (first use, a server still warming up, a package installed
since the server started, a socket path too long) the client runs the `dbt` executable in its
own place instead, so a command never waits on or fails because of the server.
LAKEHOUSE_DBT_WARM=0 turns it off. `lakehouse down` stops the server; it also stops by itself
after LAKEHOUSE_DBT_WARM_IDLE_MINUTES (default 30) without a command, or when its home goes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: Environment switch: "0" runs the plain `dbt` executable.
SWITCH = "LAKEHOUSE_DBT_WARM"
#: Minutes without a command after which the server exits.
IDLE_SWITCH = "LAKEHOUSE_DBT_WARM_IDLE_MINUTES"
DEFAULT_IDLE_MINUTES = 30.0
#: Service name: $LAKEHOUSE_HOME/run/<SERVICE>.pid (ingestion.services), .sock and .lock.
SERVICE = "dbt-warm"
#: Longest path an AF_UNIX socket address can hold on Linux (sun_path is 108 bytes, NUL included).
MAX_SOCKET_PATH = 107


def dbt_executable() -> str:
    """The `dbt` executable of this interpreter's environment (the plain path, and the child's argv[0])."""
    return str(Path(sys.executable).with_name("dbt"))


def run_dir(home: str | os.PathLike[str]) -> Path:
    return Path(home) / "run"


def socket_path(home: str | os.PathLike[str]) -> Path:
    return run_dir(home) / f"{SERVICE}.sock"


def socket_path_fits(home: str | os.PathLike[str]) -> bool:
    return len(os.fsencode(socket_path(home))) <= MAX_SOCKET_PATH


def lock_path(home: str | os.PathLike[str]) -> Path:
    """Held (flock) by the live server for its whole life: at most one server per home."""
    return run_dir(home) / f"{SERVICE}.lock"


def log_path(home: str | os.PathLike[str]) -> Path:
    return Path(home) / "logs" / f"{SERVICE}.log"


def enabled(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    return (os.environ if environ is None else environ).get(SWITCH, "1") != "0"
