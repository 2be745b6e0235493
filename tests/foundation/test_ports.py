"""``lakehouse.services.ports.free_port``: ports nobody gets by chance, free when handed out."""

from __future__ import annotations

import socket

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


def test_a_port_in_use_is_not_handed_out() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        used = taken.getsockname()[1]
        assert all(free_port() != used for _ in range(300))
