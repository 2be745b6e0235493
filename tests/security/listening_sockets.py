"""Which TCP addresses a process tree listens on, read from ``/proc`` (Linux only)."""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

_LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    pid: int
    address: str
    port: int

    @property
    def is_loopback(self) -> bool:
        address = ipaddress.ip_address(self.address)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_loopback


def _decode_address(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, struct.pack("<I", struct.unpack(">I", raw)[0]))
    words = struct.unpack(">4I", raw)
    return socket.inet_ntop(socket.AF_INET6, struct.pack("<4I", *words))


def _listening_inodes(pid: int) -> dict[int, tuple[str, int]]:
    """Listening sockets of the network namespace of ``pid``: inode -> (address, port)."""
    inodes: dict[int, tuple[str, int]] = {}
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], int(fields[9])
            if state == _LISTEN:
                hex_address, hex_port = local.split(":")
                inodes[inode] = (_decode_address(hex_address), int(hex_port, 16))
    return inodes


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        entries = os.listdir(f"/proc/{pid}/fd")
    except (FileNotFoundError, PermissionError):
        return inodes
    for entry in entries:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{entry}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants (by parent PID in ``/proc/<pid>/stat``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def listeners(pids: list[int]) -> list[Listener]:
    """Every listening TCP socket held by one of ``pids``."""
    found = []
    for pid in pids:
        table = _listening_inodes(pid)
        for inode in _socket_inodes(pid):
            if inode in table:
                address, port = table[inode]
                found.append(Listener(pid, address, port))
    return found


def assert_loopback_only(pids: list[int], what: str) -> None:
    """Fail unless ``pids`` listen somewhere, and only on loopback addresses."""
    found = listeners(pids)
    assert found, f"{what}: no listening socket found at all (the detector sees nothing?)"
    exposed = [f"{item.address}:{item.port} (pid {item.pid})" for item in found if not item.is_loopback]
    assert not exposed, f"{what} listens beyond loopback: {', '.join(exposed)}"
