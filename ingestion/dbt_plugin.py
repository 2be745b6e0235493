"""A dbt plugin that makes this project's dbt commands cheaper in dbt's own process.

It does two things: it keeps Python's cyclic garbage collector off dbt's long-lived
objects (below), and it has dbt's JSON artifacts encoded by the C encoder
(ingestion/dbt_json_writer.py; LAKEHOUSE_DBT_FAST_JSON=0 switches that off).

A dbt command builds ~200,000 Python objects before it runs anything (its modules, then
this project's manifest: 34 models, 248 tests, 558 macros) and keeps them until it exits.
CPython's collector walks every one of them in each full collection: 2-5 times during a
`dbt run` and once more while the interpreter shuts down, 0.1-0.5 s each with the GIL held,
so every dbt thread waits. `gc.freeze()` moves the objects alive at that moment into a
permanent generation the collector skips; objects created afterwards are collected as
usual. This plugin freezes after start-up, after parsing and at exit. On the embedded
default it takes ~1 s off every dbt command (a silver incremental run: 5.4-6.0 s ->
4.3-5.0 s, docs/performance.md).

It acts only in the `dbt` command-line process, for this project (`tickit_lakehouse`), and
unless LAKEHOUSE_DBT_GC_FREEZE=0 (the freezing) or LAKEHOUSE_DBT_FAST_JSON=0 (the
writer). A process that calls dbt in-process again and again (dbtRunner in a service) is
left alone: frozen objects are never collected, so it would keep every invocation's
garbage cycles.

dbt finds plugins as top-level modules named `dbt_*` that hold a `plugins` list
(dbt.plugins.manager, an interface dbt marks experimental): `dbt_plugin/` holds that
module, a shim importing this one, installed by scripts/setup.sh. If dbt changes the
interface, the shim offers no plugin and dbt runs as before.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from typing import Any

from ingestion import dbt_json_writer

PROJECT_NAME = "tickit_lakehouse"
SWITCH = "LAKEHOUSE_DBT_GC_FREEZE"


def wanted(project_name: str, switch: str, argv0: str | None = None, environ: dict[str, str] | None = None) -> bool:
    """True in the `dbt` command-line process of this project, unless `switch` is set to 0."""
    program = os.path.basename(sys.argv[0] if argv0 is None else argv0)
    setting = (os.environ if environ is None else environ).get(switch, "1")
    return project_name == PROJECT_NAME and program == "dbt" and setting != "0"


def freezing_wanted(project_name: str, argv0: str | None = None, environ: dict[str, str] | None = None) -> bool:
    """True in the `dbt` command-line process of this project, unless LAKEHOUSE_DBT_GC_FREEZE=0."""
    return wanted(project_name, SWITCH, argv0, environ)


def _load_plugin_class() -> type | None:
    try:
        from dbt.plugins.manager import dbt_hook, dbtPlugin
    except ImportError:  # a dbt without the (experimental) plugin interface: no plugin
        return None

    class LakehouseDbtPlugin(dbtPlugin):
        """Installs the JSON writer; freezes dbt's objects after start-up, parsing and at exit (module docstring)."""

        def initialize(self) -> None:
            if wanted(self.project_name, dbt_json_writer.SWITCH):
                dbt_json_writer.install()
            self.active = freezing_wanted(self.project_name)
            if self.active:
                gc.freeze()
                atexit.register(gc.freeze)

        @dbt_hook
        def get_manifest_artifacts(self, manifest: Any) -> dict:
            # called once the manifest is parsed (when dbt writes manifest.json)
            if self.active:
                gc.freeze()
            return {}

    return LakehouseDbtPlugin


_plugin = _load_plugin_class()
plugins: list[type] = [_plugin] if _plugin is not None else []
