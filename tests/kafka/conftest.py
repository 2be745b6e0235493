"""Fixtures of the Kafka source tests: one broker per test run (stopped by PID), a small registry."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from lakehouse.config import load_settings
from lakehouse.services import kafka
from tests.conftest import free_port
from tests.kafka.registry import SmallRegistry


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka.BrokerConfig]:
    """One KRaft broker (temporary home, free port on 127.0.0.1) for the whole test run."""
    home = tmp_path_factory.mktemp("kafka-broker")
    config = kafka.broker_config(dataclasses.replace(load_settings(), home=home), free_port())
    try:
        kafka.start(config)
    except kafka.KafkaError as exc:  # e.g. another process took the free port first: once more, on another
        print(f"the test broker did not start ({exc}); trying another port")
        kafka.stop(config)
        config = kafka.broker_config(config.settings, free_port())
        kafka.start(config)
    try:
        yield config
    finally:
        kafka.stop(config)


@pytest.fixture
def registry() -> Iterator[SmallRegistry]:
    server = SmallRegistry()
    try:
        yield server
    finally:
        server.stop()
