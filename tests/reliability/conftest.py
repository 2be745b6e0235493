"""Reliability suite: prints the figures table (scenario | trials | events | lost | duplicated | errors).

The table is printed when at least one ``reliability``-marked test ran (the few fast
tests of this directory that run in the default suite record figures too, silently).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lakehouse.services import thrift
from tests.conftest import ThriftServer, free_port, settings_for
from tests.reliability.figures import figures, render_table, write_json

_RELIABILITY_RAN = pytest.StashKey[bool]()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("reliability") is not None:
        item.config.stash[_RELIABILITY_RAN] = True


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    rows = figures()
    if not rows or not config.stash.get(_RELIABILITY_RAN, False):
        return
    terminalreporter.section("reliability figures")
    terminalreporter.write_line(render_table(rows))
    try:
        path = write_json(rows)
    except OSError as exc:  # the table above is what matters
        terminalreporter.write_line(f"(figures not written: {exc})")
    else:
        terminalreporter.write_line(f"figures written to {path}")


@pytest.fixture(scope="module")
def own_thrift_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThriftServer]:
    """A managed Thrift server only this suite uses: it gets killed, and its metastore gets our views."""
    home = tmp_path_factory.mktemp("reliability-thrift")
    settings = settings_for(home, free_port())
    thrift.start(settings, timeout=600)
    try:
        yield ThriftServer(settings)
    finally:
        thrift.stop(settings)
