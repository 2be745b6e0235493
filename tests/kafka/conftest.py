"""Fixtures of the Kafka source tests: a small registry (the broker is the run's one, tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kafka.registry import SmallRegistry


@pytest.fixture
def registry() -> Iterator[SmallRegistry]:
    server = SmallRegistry()
    try:
        yield server
    finally:
        server.stop()
