"""The vectorized bloom filter against a scalar transcription of Hadoop's Java code."""

from __future__ import annotations

import random

from ingestion.hoodie.bloom import DynamicBloomFilter, bit_size, key_bit_positions, num_hashes


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def java_murmur(data: bytes, seed: int) -> int:
    """org.apache.hudi.common.util.hash.MurmurHash.hash(byte[], int, int, int), line by line."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    signed = [b - 256 if b > 127 else b for b in data]  # Java bytes are signed
    h = _to_int32(seed ^ length)
    len4 = length >> 2
    for i in range(len4):
        i4 = i << 2
        k = signed[i4 + 3]
        k = _to_int32(k << 8) | (signed[i4 + 2] & 0xFF)
        k = _to_int32(k << 8) | (signed[i4 + 1] & 0xFF)
        k = _to_int32(k << 8) | (signed[i4 + 0] & 0xFF)
        k = _to_int32(k * m)
        k ^= (k & 0xFFFFFFFF) >> r
        k = _to_int32(k * m)
        h = _to_int32(h * m)
        h = _to_int32(h ^ k)
    left = length - (len4 << 2)
    if left:
        if left >= 3:
            h = _to_int32(h ^ (signed[len4 * 4 + 2] << 16))
        if left >= 2:
            h = _to_int32(h ^ (signed[len4 * 4 + 1] << 8))
        h = _to_int32(h ^ signed[len4 * 4])
        h = _to_int32(h * m)
    h = _to_int32(h ^ ((h & 0xFFFFFFFF) >> 13))
    h = _to_int32(h * m)
    h = _to_int32(h ^ ((h & 0xFFFFFFFF) >> 15))
    return h


def java_positions(key: bytes, hash_count: int, vector_size: int) -> list[int]:
    """Hadoop HashFunction.hash: chained seeds, Math.abs(initval % maxValue) with Java's remainder."""
    out, seed = [], 0
    for _ in range(hash_count):
        seed = java_murmur(key, seed)
        remainder = abs(seed) % vector_size * (1 if seed >= 0 else -1)
        out.append(abs(remainder))
    return out


def test_sizes_match_hudi_defaults():
    # The header of every Java-written footer in the fixtures: nbHash 30, vectorSize 0x00277d3e.
    assert bit_size(60_000, 1e-9) == 0x00277D3E == 2587966
    assert num_hashes(2587966, 60_000) == 30


def test_vectorized_positions_equal_the_java_transcription():
    rng = random.Random(11)
    alphabet = "abcXYZ019:,_-é€😀"
    keys = ["", "1", "id:1,name:Alice"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(120)
    ]
    encoded = [k.encode() for k in keys]
    got = key_bit_positions(encoded, 30, 2587966)
    for index, key in enumerate(encoded):
        assert list(got[index]) == java_positions(key, 30, 2587966), keys[index]


def test_dynamic_rows_and_round_trip():
    bloom = DynamicBloomFilter(num_entries=100, fpp=0.01, max_entries=250)
    keys = [f"key-{i}" for i in range(400)]
    bloom.add_all(keys)
    assert len(bloom.rows) == 3  # 100 per row, at most ceil(250 / 100) rows, then round robin
    restored = DynamicBloomFilter.deserialize_from_string(bloom.serialize_to_string())
    assert restored.serialize() == bloom.serialize()
    assert all(restored.might_contain(k) for k in keys)
    misses = sum(restored.might_contain(f"absent-{i}") for i in range(1000))
    assert misses < 200
