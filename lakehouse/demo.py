"""The main job on the embedded default: Thrift server -> simulate -> ingest -> dbt -> docs.

Each step runs as its own ``lakehouse`` subprocess, so the demo exercises exactly what a
user types. A step whose command has not been built yet is reported as skipped; a failing
step stops the demo and is named in the exit message.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lakehouse.config import PROJECT_DIR, Settings
from lakehouse.services import thrift

DEMO_SCALE = "0.05"
DEMO_CHANGES = "3000"
DEMO_SEED = "42"


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    available: Callable[[], bool]


class DemoFailed(RuntimeError):
    def __init__(self, step: str, detail: str):
        super().__init__(f"step '{step}' failed: {detail}")
        self.step = step


def _has_command(module: str) -> Callable[[], bool]:
    return lambda: importlib.util.find_spec(f"lakehouse.cli.{module}") is not None


def _has_dbt_project() -> bool:
    return (PROJECT_DIR / "dbt_project.yml").exists()


def steps() -> list[Step]:
    return [
        Step(
            "simulate TICKIT CDC",
            ("simulate", "--scale", DEMO_SCALE, "--changes", DEMO_CHANGES, "--seed", DEMO_SEED),
            _has_command("simulate"),
        ),
        Step("ingest to bronze", ("ingest", "--once"), _has_command("ingest")),
        Step("dbt build", ("dbt", "build"), _has_dbt_project),
        Step("docs site", ("docs", "build"), lambda: _has_command("docs")() and _has_dbt_project()),
    ]


def real_sources_steps(bootstrap: str) -> list[Step]:
    """``lakehouse demo --real-sources``: PostgreSQL and MariaDB through Debezium and Kafka instead of the simulator."""
    return [
        Step("kafka broker", ("kafka", "start"), _has_command("kafka")),
        Step("real sources", ("sources", "start", "--kafka-bootstrap", bootstrap), _has_command("sources")),
        Step("changes on the databases", ("sources", "changes", "--count", "300", "--seed", DEMO_SEED),
             _has_command("sources")),
        Step("ingest from Kafka", ("ingest", "--kafka-bootstrap", bootstrap, "--once"), _has_command("ingest")),
        Step("dbt build", ("dbt", "build"), _has_dbt_project),
        Step("docs site", ("docs", "build"), lambda: _has_command("docs")() and _has_dbt_project()),
    ]


def _lakehouse() -> str:
    return str(Path(sys.executable).parent / "lakehouse")


def run_demo(settings: Settings, echo: Callable[[str], None] = print,
             plan: list[Step] | None = None) -> list[tuple[str, str]]:
    """Run every step of ``plan`` (default: the simulator's); returns (step, outcome) pairs.
    Raises DemoFailed naming the step."""
    outcomes: list[tuple[str, str]] = []
    started = time.monotonic()
    echo(f"[demo] starting the Thrift server on {settings.thrift_host}:{settings.thrift_port}")
    try:
        st = thrift.start(settings)
    except thrift.ThriftError as exc:
        raise DemoFailed("thrift server", str(exc)) from exc
    outcomes.append(("thrift server", f"running, pid {st.pid}"))
    for step in steps() if plan is None else plan:
        if not step.available():
            echo(f"[demo] {step.name}: skipped (not built yet)")
            outcomes.append((step.name, "skipped (not built yet)"))
            continue
        echo(f"[demo] {step.name}: lakehouse {' '.join(step.argv)}")
        t0 = time.monotonic()
        result = subprocess.run([_lakehouse(), *step.argv], cwd=PROJECT_DIR, check=False)  # noqa: S603
        if result.returncode != 0:
            raise DemoFailed(step.name, f"'lakehouse {' '.join(step.argv)}' exited {result.returncode}")
        outcomes.append((step.name, f"ok in {time.monotonic() - t0:.1f}s"))
    outcomes.append(("total", f"{time.monotonic() - started:.1f}s"))
    return outcomes


def where_to_look(settings: Settings) -> list[str]:
    return [
        f"Thrift server: {settings.thrift_host}:{settings.thrift_port} (lakehouse thrift status)",
        f"landing zone: {settings.landing}",
        f"bronze tables (Hudi): {settings.lake}/bronze/",
        "pipeline state: lakehouse status",
        "SQL: lakehouse dbt show --inline 'select * from silver.sales limit 5'",
        f"docs site: {settings.home / 'docs' / 'site'} ('lakehouse docs serve', then http://127.0.0.1:"
        f"{settings.docs_port}/)",
        "stop everything: lakehouse down",
    ]
