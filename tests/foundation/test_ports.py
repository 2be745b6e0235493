"""``lakehouse.services.ports.free_port``: ports nobody gets by chance, free when handed out."""

from __future__ import annotations

import socket

from lakehouse.services import ports
from lakehouse.services.ports import LOWEST, ephemeral_range, free_port


def test_ports_come_from_below_the_ephemeral_range_and_are_free() -> None:
    low, high = ephemeral_range()
    assert 0 < low < high
    ports = {free_port() for _ in range(50)}
    assert all(LOWEST <= port < low for port in ports), sorted(ports)
    assert len(ports) > 1  # drawn, not one fixed port
    for port in list(ports)[:5]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free: binding it works


class _Draws:
    """Stands in for ``random.SystemRandom``: hands out the given ports in turn (the last one ever after)."""

    def __init__(self, *ports: int) -> None:
        self.ports = list(ports)

    def randrange(self, _low: int, _high: int) -> int:
        return self.ports.pop(0) if len(self.ports) > 1 else self.ports[0]


def test_a_port_in_use_is_not_handed_out(monkeypatch) -> None:
    with socket.socket() as taken, socket.socket() as spare:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        used = taken.getsockname()[1]
        spare.bind(("127.0.0.1", free_port()))
        other = spare.getsockname()[1]
        spare.close()  # free again: the one to hand out after the port in use
        # the draw meets the port in use first: it is checked (a real bind) and passed over
        monkeypatch.setattr(ports.random, "SystemRandom", lambda: _Draws(used, other))
        assert free_port() == other
        # every draw busy: the kernel's choice, never the port in use
        monkeypatch.setattr(ports.random, "SystemRandom", lambda: _Draws(used))
        assert free_port() != used
