"""Fixtures for the docs-site and scheduled-jobs tests: a webhook receiver, a fake clock, fake steps."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


class WebhookReceiver:
    """A tiny HTTP server on 127.0.0.1 that records every JSON body POSTed to it."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length", 0))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/test"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def events(self, name: str) -> list[dict]:
        return [r for r in self.received if r.get("event") == name]


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    receiver.thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


class FakeClock:
    """A controllable clock returning naive-UTC (``now``) or aware-UTC (``aware``) datetimes."""

    def __init__(self, start: datetime) -> None:
        self.current = start  # aware UTC
        self.slept: list[float] = []

    def aware(self) -> datetime:
        return self.current

    def now(self) -> datetime:
        return self.current.replace(tzinfo=None)

    def advance(self, **delta: float) -> None:
        self.current += timedelta(**delta)

    def sleep(self, seconds: float) -> None:
        """Records the wait and moves the clock instead of sleeping."""
        self.slept.append(seconds)
        self.current += timedelta(seconds=seconds)


@pytest.fixture
def python_step():
    """A step running a small Python script: ``{"command": [python, -c, code], ...}``."""

    def make(code: str, **extra) -> dict:
        return {"command": [sys.executable, "-c", code], **extra}

    return make


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "lakehouse-home"
    path.mkdir()
    return path
