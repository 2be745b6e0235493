"""Which rows of a table in one micro-batch repeat a record key, known before any row is decoded.

A re-delivered event (a connector restarted, a sink rewrote a file) carries the record key of
its first delivery; bronze stores it once, so the batch's rows are deduplicated before their
write (``batch.first_delivery``: a shuffle and a sort of whole rows). Most rows repeat no key:
the workers hash each parsed row's record key (``key_hashes``, 8 bytes a row beside the
chunk's payload); the driver, which collects the chunks' details anyway, finds the hashes that
came more than once among a table's chunks (``RecordKeys.repeated``), and only the rows with
those hashes go through the deduplication, the others are written as decoded
(``RowSelection``). The hashing is vectorized over the Arrow buffers (numpy, no Python
object per value): ~0.03 s for 180K keys of an integer and a string on one core, where
pandas' ``hash_pandas_object`` over the keys as text took ~0.25 s (pyarrow has no hash kernel).

Equal keys always hash alike: a value's hash depends only on the value (integers as numbers,
other values as their text), and the hashes are used only when every chunk of the table holds
its key columns in the types the write uses, types whose text is one-to-one with their values
(not floating point: ``-0.0`` and ``0.0``); otherwise every row of the table is deduplicated. A
collision of two different keys' hashes only sends their rows through the deduplication.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

#: FNV-1's 64-bit prime: a string's hash is the sum of its bytes times powers of it (mod 2 ** 64).
_PRIME = np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_NULL = np.uint64(0x6E756C6C)  # the hash of a null key value, whatever its type
_prime_powers = np.ones(1, dtype=np.uint64)


def _mix(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer, element-wise (uint64 arithmetic wraps, as the hash wants)."""
    values = values ^ (values >> np.uint64(30))
    values = values * np.uint64(0xBF58476D1CE4E5B9)
    values = values ^ (values >> np.uint64(27))
    values = values * np.uint64(0x94D049BB133111EB)
    return values ^ (values >> np.uint64(31))


def _powers(count: int) -> np.ndarray:
    """_PRIME ** 0 .. count - 1 (mod 2 ** 64), grown on demand (to the longest string) and kept."""
    global _prime_powers
    if _prime_powers.size < count:
        factors = np.full(max(count, 2 * _prime_powers.size, 64), _PRIME, dtype=np.uint64)
        factors[0] = 1
        _prime_powers = np.cumprod(factors, dtype=np.uint64)
    return _prime_powers[:count]


def _string_hashes(values: pa.Array) -> np.ndarray:
    """A 64-bit hash of each string from the Arrow buffers (no Python object per value): the sum of
    its bytes times powers of a prime, mixed with its length."""
    if not pa.types.is_large_string(values.type):
        values = values.cast(pa.string())
    count = len(values)
    _, offset_buffer, data_buffer = values.buffers()
    offset_type = np.int64 if pa.types.is_large_string(values.type) else np.int32
    offsets = np.frombuffer(offset_buffer, dtype=offset_type)[values.offset:values.offset + count + 1].astype(np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    body = data[int(offsets[0]):int(offsets[-1])]
    starts, lengths = offsets[:-1] - offsets[0], np.diff(offsets)
    place = np.arange(body.size, dtype=np.int64) - np.repeat(starts, lengths)  # each byte's place in its string
    weighted = np.zeros(body.size + 1, dtype=np.uint64)  # one more: reduceat may start at the end
    np.multiply(body, _powers(int(lengths.max(initial=0)))[place], out=weighted[:-1])
    sums = np.add.reduceat(weighted, starts) if count else np.zeros(0, np.uint64)
    sums[lengths == 0] = 0  # reduceat gives an empty string the next string's first byte
    return _mix(sums ^ (lengths.astype(np.uint64) * _GOLDEN))


def _column_hashes(column: pa.ChunkedArray) -> np.ndarray:
    return np.concatenate([_array_hashes(chunk) for chunk in column.chunks]) if column.num_chunks \
        else np.zeros(0, np.uint64)


def _array_hashes(values: pa.Array) -> np.ndarray:
    if pa.types.is_integer(values.type):
        hashes = _mix(values.cast(pa.int64()).fill_null(0).to_numpy().view(np.uint64))
    else:
        hashes = _string_hashes(values)
    if values.null_count:
        hashes = np.where(values.is_null().to_numpy(zero_copy_only=False), _NULL, hashes)
    return hashes


def key_types(schema: pa.Schema, keys: Sequence[str]) -> str:
    """The Arrow types of the ``keys`` columns of ``schema``, as one comparable string."""
    return ",".join(str(schema.field(key).type) for key in keys)


def key_hashes(data: pa.Table, keys: Sequence[str]) -> bytes:
    """The 64-bit hash of each row's record key (of the values of its ``keys`` columns), as bytes.
    Integer columns are hashed as numbers, the others as their text."""
    combined = np.zeros(data.num_rows, dtype=np.uint64)
    for key in keys:
        combined = _mix(combined * _PRIME + _column_hashes(data.column(key)))
    return combined.tobytes()


def _text_is_one_to_one(kind: pa.DataType) -> bool:
    return (pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or pa.types.is_date(kind) or pa.types.is_timestamp(kind) or pa.types.is_decimal(kind)
            or pa.types.is_boolean(kind))


@dataclass(frozen=True)
class RowSelection:
    """Which of a table's rows to decode: those whose record key (``keys``) hashes to one of
    ``repeated`` (``repeating``), or the others."""

    keys: tuple[str, ...]
    repeated: np.ndarray
    repeating: bool

    def rows(self, data: pa.Table) -> pa.Table:
        """The rows of ``data`` this selection selects."""
        if not self.repeated.size:
            return data.slice(0, 0) if self.repeating else data
        found = np.isin(np.frombuffer(key_hashes(data, self.keys), dtype=np.uint64), self.repeated)
        return data.filter(pa.array(found if self.repeating else ~found))


@dataclass
class RecordKeys:
    """The key hashes of one table's chunks in a batch, and the key types each chunk held."""

    types: set[str] = field(default_factory=set)
    hashes: list[bytes] = field(default_factory=list)

    def add(self, types: str | None, hashes: bytes | None) -> None:
        """A chunk's key types and hashes (None for either: unknown, so the keys may repeat)."""
        self.types.add(types or "")
        self.hashes.append(hashes or b"")

    def repeated(self, schema: pa.Schema, keys: Sequence[str]) -> np.ndarray | None:
        """The hashes found more than once among the table's rows, written in ``schema`` (the
        write's types of the ``keys`` columns): empty when no record key repeats; None when the
        hashes cannot tell (see the module docstring), so that every row may repeat a key."""
        if not all(_text_is_one_to_one(schema.field(key).type) for key in keys):
            return None
        if self.types != {key_types(schema, keys)}:
            return None
        values, counts = np.unique(np.frombuffer(b"".join(self.hashes), dtype=np.uint64), return_counts=True)
        return values[counts > 1]
