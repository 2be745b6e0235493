"""Hudi's bloom filter, bit-for-bit: ``HoodieDynamicBoundedBloomFilter`` (type code ``DYNAMIC_V0``).

Java Hudi stores it base64-encoded in every base file footer under ``org.apache.hudi.bloomfilter``;
its BLOOM index reads it to skip files that cannot hold a key. The layout is Hadoop's
``DynamicBloomFilter`` serialization (as copied into hudi-common as ``InternalDynamicBloomFilter``):

    int -1 (version), int nbHash, byte hashType (1 = MURMUR), int vectorSize,
    int entriesPerRow, int currentNbRecord, int rows,
    rows x [int -1, int nbHash, byte hashType, int vectorSize, bytes[(vectorSize + 7) // 8]]

all big-endian; bit ``i`` of a row lives in byte ``i // 8`` at mask ``1 << (i % 8)``. Key hashes are
Hadoop's MurmurHash (MurmurHash2, 32 bit) chained ``nbHash`` times from seed 0, each taken as
``abs(h % vectorSize)`` with Java's truncating remainder. Hashing is vectorized with numpy per key
length so a million keys take seconds, not minutes.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

BLOOM_TYPE_CODE = "DYNAMIC_V0"
DEFAULT_NUM_ENTRIES = 60_000  # hoodie.index.bloom.num_entries
DEFAULT_FPP = 0.000000001  # hoodie.index.bloom.fpp
DEFAULT_MAX_ENTRIES = 100_000  # hoodie.bloom.index.filter.dynamic.max.entries
_MURMUR_HASH_TYPE = 1
_M = np.uint32(0x5BD1E995)


def bit_size(num_entries: int, fpp: float) -> int:
    """``BloomFilterUtils.getBitSize``."""
    return int(math.ceil(num_entries * (-math.log(fpp) / (math.log(2) * math.log(2)))))


def num_hashes(bits: int, num_entries: int) -> int:
    """``BloomFilterUtils.getNumHashes``."""
    return int(math.ceil(math.log(2) * bits / num_entries))


def _bit_positions(data: np.ndarray, hash_count: int, vector_size: int) -> np.ndarray:
    """(n, hash_count) bit positions of rows of equal length, as Hadoop ``HashFunction.hash``.

    Each position chains MurmurHash (seed = previous hash). The mixed 4-byte words and the tail
    do not depend on the seed, so they are computed once and every round only folds them in.
    """
    n, length = data.shape
    m, r24, r13, r15 = _M, np.uint32(24), np.uint32(13), np.uint32(15)
    out = np.empty((n, hash_count), dtype=np.int64)
    with np.errstate(over="ignore"):
        len4 = length >> 2
        # little-endian 4-byte words, one row per word position (contiguous for the rounds below)
        k = np.ascontiguousarray(data[:, : len4 * 4]).view("<u4").astype(np.uint32).T.copy()
        k *= m
        k ^= k >> r24
        k *= m
        left = length - len4 * 4
        tail = np.zeros(n, dtype=np.uint32)
        if left:
            # Java sign-extends the tail bytes before shifting: (int) data[i] << s.
            signed = data[:, len4 * 4 :].astype(np.int8).astype(np.int32).astype(np.uint32)
            if left >= 3:
                tail ^= signed[:, 2] << np.uint32(16)
            if left >= 2:
                tail ^= signed[:, 1] << np.uint32(8)
            tail ^= signed[:, 0]
        h = np.zeros(n, dtype=np.uint32)
        for index in range(hash_count):
            h = h ^ np.uint32(length)
            for i in range(len4):
                h *= m
                h ^= k[i]
            if left:
                h ^= tail
                h *= m
            h ^= h >> r13
            h *= m
            h ^= h >> r15
            signed_h = h.view(np.int32).astype(np.int64)
            out[:, index] = np.abs(np.fmod(signed_h, vector_size))  # Java % truncates toward zero
    return out


def key_bit_positions(keys: Sequence[bytes] | pa.Array, hash_count: int, vector_size: int) -> np.ndarray:
    """Bit positions of every key, in input order: shape (len(keys), hash_count).

    ``keys`` is a list of UTF-8 byte strings or an Arrow string array (read without copying to Python).
    """
    if not isinstance(keys, pa.Array | pa.ChunkedArray):
        keys = pa.array(keys, pa.binary())
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], pa.binary())
    keys = keys.cast(pa.large_binary())
    count = len(keys)
    result = np.empty((count, hash_count), dtype=np.int64)
    if count == 0:
        return result
    lengths = np.diff(_offsets(keys))
    # keys ordered by length: the keys of one length are then one contiguous (n, length) block
    order = np.argsort(lengths, kind="stable")
    by_length = keys.take(pa.array(order, pa.int64()))
    offsets = _offsets(by_length)
    data_buffer = by_length.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    sorted_lengths = lengths[order]
    bounds = np.flatnonzero(np.diff(sorted_lengths)) + 1
    for start, end in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [count]]), strict=True):
        length = int(sorted_lengths[start])
        first = int(offsets[start])
        matrix = data[first : first + (end - start) * length].reshape(end - start, length)
        result[order[start:end]] = _bit_positions(matrix, hash_count, vector_size)
    return result


def _offsets(keys: pa.Array) -> np.ndarray:
    """The int64 value offsets of a ``large_binary`` array (``count + 1`` of them)."""
    return np.frombuffer(keys.buffers()[1], dtype=np.int64)[keys.offset : keys.offset + len(keys) + 1]


class DynamicBloomFilter:
    """Hudi's ``HoodieDynamicBoundedBloomFilter``: rows of standard filters, bounded in count."""

    def __init__(
        self,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self.vector_size = bit_size(num_entries, fpp)
        self.hash_count = num_hashes(self.vector_size, num_entries)
        self.entries_per_row = num_entries
        self.max_entries = max_entries
        self.rows: list[np.ndarray] = [np.zeros(self.vector_size, dtype=bool)]
        self.current_records = 0
        self._reached_max = False
        self._round_robin = 0

    def _active_row(self) -> int:
        """Mirror of ``InternalDynamicBloomFilter.getActiveStandardBF`` (including its quirks)."""
        if self._reached_max:
            row = self._round_robin % len(self.rows)
            self._round_robin += 1
            return row
        full = self.current_records >= self.entries_per_row
        if full and len(self.rows) * self.entries_per_row < self.max_entries:
            self.rows.append(np.zeros(self.vector_size, dtype=bool))
            self.current_records = 0
            return len(self.rows) - 1
        if full:
            self._reached_max = True
            return 0
        return len(self.rows) - 1

    def add_all(self, keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> None:
        if isinstance(keys, pa.Array | pa.ChunkedArray):
            arrow_keys = keys
        else:
            arrow_keys = pa.array([key.encode("utf-8") for key in keys], pa.binary())
        if len(arrow_keys) == 0:
            return
        positions = key_bit_positions(arrow_keys, self.hash_count, self.vector_size)
        total = len(positions)
        start = 0
        while start < total:
            row = self._active_row()
            if self._reached_max:
                # Round robin, one key per row: assign the rest key by key.
                self.rows[row][positions[start]] = True
                self.current_records += 1
                start += 1
                continue
            room = max(1, self.entries_per_row - self.current_records)
            chunk = positions[start : start + room]
            self.rows[row][chunk.ravel()] = True
            self.current_records += len(chunk)
            start += len(chunk)

    def might_contain(self, key: str) -> bool:
        positions = key_bit_positions([key.encode("utf-8")], self.hash_count, self.vector_size)[0]
        return any(bool(row[positions].all()) for row in self.rows)

    def serialize(self) -> bytes:
        header = struct.pack(">ibi", self.hash_count, _MURMUR_HASH_TYPE, self.vector_size)
        out = [struct.pack(">i", -1), header]
        out.append(struct.pack(">iii", self.entries_per_row, self.current_records, len(self.rows)))
        for row in self.rows:
            out.append(struct.pack(">i", -1))
            out.append(header)
            out.append(np.packbits(row, bitorder="little").tobytes())
        return b"".join(out)

    def serialize_to_string(self) -> str:
        return base64.b64encode(self.serialize()).decode("ascii")

    @classmethod
    def deserialize_from_string(cls, text: str) -> DynamicBloomFilter:
        raw = base64.b64decode(text)
        version, hash_count, hash_type, vector_size = struct.unpack_from(">iibi", raw, 0)
        if version != -1 or hash_type != _MURMUR_HASH_TYPE:
            raise ValueError(f"not a Hudi dynamic bloom filter (version {version}, hash type {hash_type})")
        entries_per_row, current, row_count = struct.unpack_from(">iii", raw, 13)
        bloom = cls.__new__(cls)
        bloom.vector_size, bloom.hash_count = vector_size, hash_count
        bloom.entries_per_row, bloom.max_entries = entries_per_row, DEFAULT_MAX_ENTRIES
        bloom.current_records, bloom._reached_max, bloom._round_robin = current, False, 0
        nbytes = (vector_size + 7) // 8
        offset = 25
        bloom.rows = []
        for _ in range(row_count):
            offset += 13
            bits = np.unpackbits(np.frombuffer(raw, np.uint8, nbytes, offset), bitorder="little")
            bloom.rows.append(bits[:vector_size].astype(bool))
            offset += nbytes
        return bloom
