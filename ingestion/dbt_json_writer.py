"""dbt's JSON artifacts encoded by CPython's C encoder: ~0.3 s less per dbt command here.

dbt writes `manifest.json` twice per command (after parsing and after the run) and
`run_results.json` once, through dbt_common's `write_json`. Since dbt-common 1.0 that
function streams the document with `json.dump(data, file, cls=...)`, and `json.dump` never
uses the C encoder: it goes through the pure-Python `_make_iterencode`. `json.dumps` with the
same arguments encodes in C and gives the same text (checked byte for byte by
tests/foundation/test_dbt_json_writer.py). For this project's 1.7 MB manifest the Python path
costs ~70 ms per write against ~17 ms; a `dbt run -s tag:silver` with nothing to do took
3.58 s against 3.30 s (medians of 12 alternating runs, docs/performance.md, session 10).

The price is one string of the whole document in memory (dbt-common streamed it to keep
the peak low for very large manifests): a few MB here. `install()` is called by the
project's dbt plugin (ingestion/dbt_plugin.py), which acts only in this project's `dbt`
process; LAKEHOUSE_DBT_FAST_JSON=0 switches it off.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from typing import Any

SWITCH = "LAKEHOUSE_DBT_FAST_JSON"


def write_json(path: str, data: dict[str, Any]) -> bool:
    """dbt_common's write_json, encoded in one piece (its behaviour before dbt-common 1.0)."""
    from dbt_common.clients import system
    from dbt_common.utils.encoding import JSONEncoder

    # write_file: dbt's own path handling (long Windows paths), directory creation and errors
    return system.write_file(path, json.dumps(data, cls=JSONEncoder))


def install() -> bool:
    """Puts write_json in place of dbt_common's in every loaded dbt module; False if dbt's differs.

    Modules import it by name (`from dbt_common.clients.system import write_json`), so each
    loaded module's binding is replaced too; modules imported later get it from dbt_common.
    """
    try:
        from dbt_common.clients import system
    except ImportError:
        return False
    original: Callable[..., Any] = system.write_json
    if original is write_json:
        return True
    if list(inspect.signature(original).parameters) != ["path", "data"] or not hasattr(system, "write_file"):
        return False  # a dbt-common whose writer we do not know: leave it alone
    for name, module in list(sys.modules.items()):
        if name.startswith(("dbt.", "dbt_common.")) and getattr(module, "write_json", None) is original:
            module.write_json = write_json
    return True
