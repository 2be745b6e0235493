"""Messages between the warm-dbt client and server: one JSON object per line, over a Unix socket.

The request carries the client's stdin/stdout/stderr as file descriptors (SCM_RIGHTS) with
its first bytes, so the child writes straight into the client's terminal, pipe or file.
"""

from __future__ import annotations

import json
import socket
from typing import Any

MAX_MESSAGE = 1 << 22  # 4 MiB: a request is argv + environment


class WireError(Exception):
    """The peer sent something that is not a message of this protocol, or went away mid-message."""


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    if data:
        sock.sendall(data)


class Reader:
    """Reads messages (and, with the first, passed file descriptors) from one socket."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buffer, self.fds = sock, b"", []

    def receive(self, want_fds: int = 0) -> dict[str, Any] | None:
        """The next message, or None when the peer closed the connection before sending one."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_MESSAGE:
                raise WireError("message too long")
            if want_fds and not self.fds:
                chunk, fds, _flags, _addr = socket.recv_fds(self.sock, 65536, want_fds)
                self.fds.extend(fds)
            else:
                chunk = self.sock.recv(65536)
            if not chunk:
                if self.buffer:
                    raise WireError("connection closed in the middle of a message")
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError as exc:
            raise WireError(f"not a JSON message: {exc}") from exc
        if not isinstance(message, dict):
            raise WireError("a message must be a JSON object")
        return message
