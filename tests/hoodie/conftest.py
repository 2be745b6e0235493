"""Fixtures of the judge tests: unpacked copies of the Java-written tables."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hudi-tables"


@pytest.fixture
def java_table(tmp_path: Path):
    """Unzip a fixture table into a fresh temporary directory; returns its base path."""

    def unpack(name: str) -> Path:
        with zipfile.ZipFile(FIXTURES / f"{name}.zip") as archive:
            archive.extractall(tmp_path)
        shutil.rmtree(tmp_path / "__MACOSX", ignore_errors=True)
        for junk in (tmp_path / name).rglob(".DS_Store"):
            junk.unlink()
        return tmp_path / name

    return unpack
