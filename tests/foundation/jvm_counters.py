"""Read a running HotSpot JVM's performance counters from its hsperfdata file.

HotSpot publishes its counters (`jcmd <pid> PerfCounter.print` shows the same ones) in a
memory-mapped file, /tmp/hsperfdata_<user>/<pid>, unless started with -XX:-UsePerfData.
Reading it needs no JDK tools, so a test can check the Thrift server's JVM on a machine
that has only a JRE (`make setup` installs openjdk-17-jre-headless, which has no jcmd).

The layout is HotSpot's PerfDataPrologue and PerfDataEntry (src/hotspot/share/runtime/perfMemory.hpp):
a 32-byte prologue (magic 0xcafec0c0, byte order, version, accessible flag, used, overflow,
modification time, offset of the first entry, number of entries), then one entry per
counter: its length, the offsets of its name and data, a vector length (0 for a scalar),
and a one-byte type code ('J' = 64-bit long, 'B' = byte vector holding a string).
"""

from __future__ import annotations

import getpass
import struct
from pathlib import Path

MAGIC = b"\xca\xfe\xc0\xc0"  # written big-endian whatever the buffer's byte order
PROLOGUE_SIZE = 32
# after the magic: byte order, major, minor, accessible, used, overflow, modification time, entry offset, entries
PROLOGUE_TAIL = "bbbbiiqii"
# length, name offset, vector length, type code, flags, units, variability, data offset
ENTRY = "iiibbbbi"


class PerfDataError(RuntimeError):
    """The JVM's hsperfdata file is missing or not in the expected layout."""


def perf_data_path(pid: int, user: str | None = None) -> Path:
    """Where HotSpot keeps the counters of ``pid`` (its temp directory is /tmp on Linux)."""
    return Path("/tmp") / f"hsperfdata_{user or getpass.getuser()}" / str(pid)


def parse_perf_data(data: bytes) -> dict[str, int | str]:
    """Every long counter (as int) and string counter (as str) in an hsperfdata image."""
    if len(data) < PROLOGUE_SIZE:
        raise PerfDataError(f"hsperfdata image of {len(data)} bytes is shorter than its {PROLOGUE_SIZE}-byte prologue")
    if data[:4] != MAGIC:
        raise PerfDataError(f"hsperfdata magic is {data[:4].hex()}, expected {MAGIC.hex()}")
    endian = "<" if data[4] == 1 else ">"  # 1: little-endian, 0: big-endian
    *_, offset, count = struct.unpack_from(endian + PROLOGUE_TAIL, data, 4)
    entry = struct.Struct(endian + ENTRY)
    counters: dict[str, int | str] = {}
    for _ in range(count):
        if offset + entry.size > len(data):
            raise PerfDataError(f"hsperfdata entry at offset {offset} runs past the end of the image")
        length, name_offset, vector_length, type_code, _flags, _units, _variability, data_offset = entry.unpack_from(
            data, offset
        )
        if length <= 0:
            raise PerfDataError(f"hsperfdata entry at offset {offset} has length {length}")
        name_start = offset + name_offset
        name = data[name_start : data.index(b"\0", name_start)].decode("ascii", "replace")
        kind = chr(type_code & 0xFF)
        value_at = offset + data_offset
        if kind == "J" and vector_length == 0:
            counters[name] = struct.unpack_from(endian + "q", data, value_at)[0]
        elif kind == "B" and vector_length > 0:
            raw = data[value_at : value_at + vector_length]
            counters[name] = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        offset += length
    return counters


def read_perf_counters(pid: int) -> dict[str, int | str]:
    """The counters of the running JVM ``pid``; PerfDataError when it publishes none."""
    path = perf_data_path(pid)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PerfDataError(f"cannot read the counters of JVM {pid} at {path}: {error}") from error
    return parse_perf_data(data)
