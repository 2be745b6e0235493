"""A small client of the Spark Thrift server (HiveServer2 protocol, PyHive)."""

from __future__ import annotations

import contextlib
import socket
from typing import Any

from ingestion.errors import IngestionError


class ThriftUnavailable(IngestionError, RuntimeError):
    """The Thrift server cannot be reached (the stream keeps going; the sync catches up later)."""


class ThriftStatementError(IngestionError, RuntimeError):
    """The server refused or failed a statement; the message is the server's own, without its stack trace."""


def server_message(exc: Exception) -> str:
    """The server's error message of a failed statement (PyHive wraps the whole response)."""
    response = exc.args[0] if exc.args else None
    status = getattr(response, "status", None)
    message = getattr(status, "errorMessage", None) or str(exc)
    return message.strip().splitlines()[0] if message.strip() else type(exc).__name__


class ThriftCatalog:
    """One connection to the Thrift server; statements run one at a time."""

    def __init__(self, host: str, port: int, *, connect_timeout: float = 5.0):
        self.host = host
        self.port = port
        self._connect_timeout = connect_timeout
        self._connection = None

    def _connect(self):
        if self._connection is None:
            try:
                with socket.create_connection((self.host, self.port), timeout=self._connect_timeout):
                    pass
            except OSError as exc:
                raise ThriftUnavailable(
                    f"Thrift server {self.host}:{self.port} is not reachable: {exc}"
                ) from exc
            from pyhive import hive

            try:
                self._connection = hive.connect(host=self.host, port=self.port, username="lakehouse")
            except Exception as exc:  # noqa: BLE001 - thrift/sasl errors have no common base
                raise ThriftUnavailable(f"cannot open a session on {self.host}:{self.port}: {exc}") from exc
        return self._connection

    def execute(self, statement: str) -> list[tuple[Any, ...]]:
        """Run one statement; rows for queries, [] otherwise."""
        connection = self._connect()
        cursor = connection.cursor()
        try:
            try:
                cursor.execute(statement)
            except (OSError, EOFError) as exc:
                self.close()
                raise ThriftUnavailable(f"lost the Thrift server {self.host}:{self.port}: {exc}") from exc
            except Exception as exc:
                if type(exc).__module__.startswith("thrift"):
                    self.close()
                    raise ThriftUnavailable(f"lost the Thrift server {self.host}:{self.port}: {exc}") from exc
                raise ThriftStatementError(server_message(exc)) from None
            if cursor.description is None:
                return []
            try:
                return list(cursor.fetchall())
            except TypeError:
                # Spark 3.5's server describes a command's (empty) result as one `Result` column
                # but sends no rows object, which PyHive's fetch does not expect
                return []
        finally:
            cursor.close()

    def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):  # closing a dead connection
                self._connection.close()
            self._connection = None

    def __enter__(self) -> ThriftCatalog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
