"""Serve the docs site on 127.0.0.1 (foreground or detached); ``stop(settings)`` for ``lakehouse down``.

The server records itself as the ``docs`` service (``$LAKEHOUSE_HOME/run/docs.pid``,
PID + process start time, see ``lakehouse.services.registry``), so ``lakehouse down`` and
:func:`stop` never signal a recycled PID.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from lakehouse.config import Settings
from lakehouse.docs_site.site import REQUIRED_FILES, site_dir
from lakehouse.services import registry

SERVICE_NAME = "docs"
BIND_HOST = "127.0.0.1"


class DocsServerError(RuntimeError):
    """The site is missing, the port is taken, or the detached server did not come up."""


class _Handler(SimpleHTTPRequestHandler):
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".html": "text/html; charset=utf-8",
        ".json": "application/json",
        ".js": "application/javascript",
        ".css": "text/css",
    }

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")  # a rebuilt site shows on reload
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server signature
        sys.stderr.write(f"docs {self.address_string()} {format % args}\n")


def check_site(directory: Path) -> None:
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    if missing:
        raise DocsServerError(f"no docs site in {directory} (missing {', '.join(missing)})")


def make_server(directory: Path, port: int) -> ThreadingHTTPServer:
    """An HTTP server for ``directory`` on 127.0.0.1:``port`` (0 = any free port)."""
    check_site(directory)
    handler = functools.partial(_Handler, directory=str(directory))
    try:
        return ThreadingHTTPServer((BIND_HOST, port), handler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise DocsServerError(f"port {port} on {BIND_HOST} is already in use") from exc
        raise


def serve_forever(settings: Settings, port: int, on_ready=None) -> None:
    """Serve the site in this process until SIGTERM/SIGINT; registered as the docs service."""
    existing = registry.read(settings, SERVICE_NAME)
    if existing and existing.alive:
        raise DocsServerError(f"a docs server already runs for {settings.home} (pid {existing.pid})")
    server = make_server(site_dir(settings), port)
    registry.register(settings, SERVICE_NAME)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    try:
        if on_ready:
            on_ready(server.server_address[1])
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        record = registry.read(settings, SERVICE_NAME)
        if record and record.pid == os.getpid():
            registry.unregister(settings, SERVICE_NAME)


def start_detached(settings: Settings, port: int, env: dict[str, str], timeout: float = 30.0) -> int:
    """Start ``lakehouse docs serve`` in the background; returns its PID once it answers."""
    check_site(site_dir(settings))
    existing = registry.read(settings, SERVICE_NAME)
    if existing and existing.alive:
        raise DocsServerError(f"a docs server already runs for {settings.home} (pid {existing.pid})")
    if _port_open(port):
        raise DocsServerError(f"port {port} on {BIND_HOST} is already in use")
    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    log_path = settings.logs_dir / "docs.log"
    code = "import sys; from lakehouse.cli import main; sys.exit(main())"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", code, "docs", "serve", "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise DocsServerError(f"the docs server exited with code {process.returncode}; see {log_path}")
        record = registry.read(settings, SERVICE_NAME)
        if record and record.pid == process.pid and _port_open(port):
            return process.pid
        time.sleep(0.1)
    process.terminate()
    raise DocsServerError(f"the docs server did not answer on port {port} within {timeout:.0f}s; see {log_path}")


def stop(settings: Settings) -> str:
    """Stop this home's docs server if it runs; returns a one-line description."""
    return registry.stop(settings, SERVICE_NAME)


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((BIND_HOST, port)) == 0
