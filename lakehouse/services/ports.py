"""Free TCP ports for the services the project starts (broker, Thrift server, databases, Connect).

A port the kernel hands out for ``bind(0)`` comes from its ephemeral range, the range it
also hands to every process that binds or connects without choosing one: a JVM starting
at the same moment (Spark's driver and block manager take random ports) can take it
before the service binds it (seen: the Thrift server failing with "Address already in
use" because Spark's block manager had just taken its port). So a port is drawn from
below the ephemeral range, where nobody gets one by chance, and checked free.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: The lowest port drawn (above the well-known services commonly run on a machine).
LOWEST = 20_000
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default when it cannot be read)."""
    try:
        low, high = (int(part) for part in _RANGE_FILE.read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32_768, 60_999


def _is_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on now, outside the ephemeral range when possible."""
    low, _ = ephemeral_range()
    if low - LOWEST >= 1_000:
        draw = random.SystemRandom()
        for _ in range(200):
            port = draw.randrange(LOWEST, low)
            if _is_free(host, port):
                return port
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
