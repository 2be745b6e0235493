"""Hard-link snapshot directories: exact file set, links not copies, atomic, idempotent, grace period."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ingestion.catalog.snapshot import TEMP_PREFIX, SnapshotFile, build_snapshot, remove_old_snapshots


def _files(base: Path) -> list[SnapshotFile]:
    specs = [
        ("d=2024-01-01", "a.parquet"), ("d=2024-01-01", "b.parquet"), ("d=2024-01-02", "c.parquet"), ("", "x.parquet"),
    ]
    out = []
    for partition, name in specs:
        folder = base / partition if partition else base
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(name.encode() * 10)
        out.append(SnapshotFile(partition, str(folder / name)))
    return out


def test_snapshot_links_exactly_the_given_files(tmp_path: Path) -> None:
    files = _files(tmp_path / "table")
    (tmp_path / "table" / "d=2024-01-01" / "not-latest.parquet").write_bytes(b"old")
    snap = build_snapshot(tmp_path / "catalog", "20240101000000000", files)
    found = sorted(str(p.relative_to(snap)) for p in snap.rglob("*") if p.is_file())
    assert found == sorted(str(Path(f.partition_path) / Path(f.path).name) for f in files)
    for item in files:
        source = Path(item.path)
        linked = snap / item.partition_path / source.name
        assert os.stat(linked).st_ino == os.stat(source).st_ino  # a hard link, not a copy
    assert not [p for p in (tmp_path / "catalog").iterdir() if p.name.startswith(TEMP_PREFIX)]


def test_snapshot_is_idempotent_and_survives_source_removal(tmp_path: Path) -> None:
    files = _files(tmp_path / "table")
    first = build_snapshot(tmp_path / "catalog", "001", files)
    again = build_snapshot(tmp_path / "catalog", "001", files)
    assert first == again
    for item in files:  # the table's own cleaning removes its files: the snapshot keeps them alive
        os.remove(item.path)
    assert (first / "d=2024-01-02" / "c.parquet").read_bytes() == b"c.parquet" * 10


def test_failed_build_leaves_no_directory(tmp_path: Path) -> None:
    files = _files(tmp_path / "table") + [SnapshotFile("d=2024-01-03", str(tmp_path / "missing.parquet"))]
    try:
        build_snapshot(tmp_path / "catalog", "002", files)
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("a missing base file must fail the snapshot")
    assert list((tmp_path / "catalog").iterdir()) == []


def test_old_snapshots_removed_after_grace_only(tmp_path: Path) -> None:
    files = _files(tmp_path / "table")
    root = tmp_path / "catalog"
    for instant in ("001", "002", "003"):
        build_snapshot(root, instant, files)
    old = time.time() - 1000
    os.utime(root / "001", (old, old))
    removed = remove_old_snapshots(root, current="003", grace_seconds=300)
    assert removed == ["001"]  # 002 is superseded but still within the grace period
    assert sorted(p.name for p in root.iterdir()) == ["002", "003"]
    assert remove_old_snapshots(root, current="003", grace_seconds=0) == ["002"]
    assert [p.name for p in root.iterdir()] == ["003"]
