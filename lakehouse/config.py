"""Project settings from environment variables (flags override env vars override defaults).

The README's "Configuration" table documents the names and defaults used here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

#: The repository root (the dbt project lives here).
PROJECT_DIR = Path(__file__).resolve().parent.parent


def _env(name: str) -> str | None:
    """The variable's value; None when it is unset or empty."""
    return os.environ.get(name) or None


def _env_or(name: str, default: str) -> str:
    return _env(name) or default


@dataclass(frozen=True)
class Settings:
    home: Path
    landing: str
    lake: str
    thrift_host: str
    thrift_port: int
    docs_port: int
    alert_webhook_url: str | None
    checkpoints: str | None = None  # LAKEHOUSE_CHECKPOINTS; None: see checkpoints_for
    warehouse_setting: str | None = None  # LAKEHOUSE_WAREHOUSE; None: see warehouse
    spark_master_port: int = 7077  # LAKEHOUSE_SPARK_MASTER_PORT: 'lakehouse cluster' master
    spark_master_ui_port: int = 8090  # LAKEHOUSE_SPARK_MASTER_UI_PORT: its web UI (/json/ for status)
    metastore_uri: str | None = None  # LAKEHOUSE_METASTORE_URI: a shared Hive Metastore; None: embedded Derby
    metastore_port: int = 9083  # LAKEHOUSE_METASTORE_PORT: 'lakehouse metastore' service

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def run_dir(self) -> Path:
        """PID files of the services this project started."""
        return self.home / "run"

    @property
    def warehouse(self) -> str:
        """Where the Thrift server keeps silver, gold and the other dbt relations
        (``spark.sql.warehouse.dir``): ``LAKEHOUSE_WAREHOUSE``, else beside a lake on another file
        system (``<lake>/warehouse``), else ``$LAKEHOUSE_HOME/warehouse``."""
        if self.warehouse_setting:
            return self.warehouse_setting
        if is_remote(self.lake):
            return self.lake.rstrip("/") + "/warehouse"
        return str(self.home / "warehouse")

    def checkpoints_for(self, lake: str) -> str:
        """Where the streaming checkpoints of an ingestion into ``lake`` live: ``LAKEHOUSE_CHECKPOINTS``,
        else next to a lake on another file system (``<lake>/_checkpoints``: a cluster's driver may run
        anywhere), else ``$LAKEHOUSE_HOME/checkpoints``."""
        if self.checkpoints:
            return self.checkpoints
        if is_remote(lake):
            return lake.rstrip("/") + "/_checkpoints"
        return str(self.home / "checkpoints")


def is_remote(location: str) -> bool:
    """Whether ``location`` is a URI of another file system than the local one (``s3a://...``)."""
    return urlparse(location).scheme not in ("", "file")


def home_dir() -> Path:
    return Path(_env_or("LAKEHOUSE_HOME", str(PROJECT_DIR / ".lakehouse"))).resolve()


def load_settings() -> Settings:
    """Read the settings from the environment, applying the documented defaults."""
    home = home_dir()
    return Settings(
        home=home,
        landing=_env_or("LAKEHOUSE_LANDING", str(home / "landing")),
        lake=_env_or("LAKEHOUSE_LAKE", str(home / "lake")),
        thrift_host=_env_or("LAKEHOUSE_THRIFT_HOST", "127.0.0.1"),
        thrift_port=int(_env_or("LAKEHOUSE_THRIFT_PORT", "10000")),
        docs_port=int(_env_or("LAKEHOUSE_DOCS_PORT", "8080")),
        alert_webhook_url=_env("LAKEHOUSE_ALERT_WEBHOOK_URL"),
        checkpoints=_env("LAKEHOUSE_CHECKPOINTS"),
        warehouse_setting=_env("LAKEHOUSE_WAREHOUSE"),
        spark_master_port=int(_env_or("LAKEHOUSE_SPARK_MASTER_PORT", "7077")),
        spark_master_ui_port=int(_env_or("LAKEHOUSE_SPARK_MASTER_UI_PORT", "8090")),
        metastore_uri=_env("LAKEHOUSE_METASTORE_URI"),
        metastore_port=int(_env_or("LAKEHOUSE_METASTORE_PORT", "9083")),
    )
