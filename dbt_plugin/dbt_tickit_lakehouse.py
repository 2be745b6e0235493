"""dbt plugin shim: dbt imports every top-level module named dbt_* and takes its `plugins`.

The plugin itself is ingestion/dbt_plugin.py (part of the editable project install, which
dbt's module scan cannot see); scripts/setup.sh installs this shim next to dbt.
"""

try:
    from ingestion.dbt_plugin import plugins
except Exception:  # the lakehouse is not installed here: dbt runs without the plugin
    plugins = []
