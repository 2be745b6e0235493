"""Fixtures of the simulator tests: small simulations (moto's server: ``moto_endpoint`` in tests/conftest.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from simulator.simulation import SimulationOptions, run_simulation

START = dt.datetime(2026, 3, 1, 9, 0, 0)


def small_options(landing: str | Path, **overrides) -> SimulationOptions:
    """A small but complete simulation: every scenario, bad lines, rotation by count and by time."""
    values = dict(
        landing=str(landing),
        scale=0.004,
        changes=600,
        seed=11,
        format="mixed",
        start_time=START,
        flush_size=400,
        rotate_interval_ms=5_000,
        inject_bad=16,
        truncate=True,
    )
    values.update(overrides)
    return SimulationOptions(**values)


@pytest.fixture(scope="module")
def mixed_landing(tmp_path_factory) -> Path:
    landing = tmp_path_factory.mktemp("mixed") / "landing"
    run_simulation(small_options(landing))
    return landing
