"""Where a streaming query keeps its checkpoint, and how to forget it.

The checkpoint lives under ``$LAKEHOUSE_HOME/checkpoints/<key>/`` where ``key`` hashes
the (landing, lake) pair: pointing the same landing zone at another lake starts from
scratch instead of skipping files the other lake already has.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path


def normalize_location(location: str) -> str:
    """A stable spelling of a local path or URI (``s3a://b/p/`` == ``s3a://b/p``)."""
    if "://" in location:
        return location.rstrip("/")
    return str(Path(location).expanduser().resolve())


def checkpoint_key(landing: str, lake: str) -> str:
    pair = f"{normalize_location(landing)}\n{normalize_location(lake)}"
    return hashlib.sha256(pair.encode()).hexdigest()[:16]


def checkpoint_dir(checkpoints_root: Path, landing: str, lake: str) -> Path:
    return Path(checkpoints_root) / checkpoint_key(landing, lake)


def prepare_checkpoint(checkpoints_root: Path, landing: str, lake: str, *, reset: bool = False) -> Path:
    """Create (or with ``reset`` first remove) the checkpoint directory of the pair.

    A ``pair.json`` inside names the landing zone and lake, so an operator can tell the
    hashed directories apart.
    """
    path = checkpoint_dir(checkpoints_root, landing, lake)
    if reset and path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    pair = {"landing": normalize_location(landing), "lake": normalize_location(lake)}
    (path / "pair.json").write_text(json.dumps(pair, indent=2) + "\n")
    return path


def query_id(checkpoint: Path) -> str | None:
    """The streaming query id Spark stored in the checkpoint (stable across restarts)."""
    try:
        return json.loads((Path(checkpoint) / "query" / "metadata").read_text())["id"]
    except (FileNotFoundError, KeyError, ValueError):
        return None
