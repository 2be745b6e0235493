"""A shared Hive Metastore on loopback: ``lakehouse metastore start|stop|status``.

The embedded Derby metastore of the Thrift server admits one JVM. A shared metastore is what
the ingestion, the Thrift server, other Spark applications and other engines (Trino, Athena's
Glue counterpart) all read and write: a standalone Hive Metastore service (the pinned
``jvm/metastore`` role: Hive 4.0.0, see its pom for why that version) backed by PostgreSQL
(Debian's package, its own data directory ``<home>/metastore/metastore-db``, database
``metastore``), its schema created by Hive's own schema tool. Both listen on 127.0.0.1 only.

Clients select it with ``LAKEHOUSE_METASTORE_URI`` (what ``start`` prints); unset, the Thrift
server keeps its embedded Derby. PIDs go through the project's registry (``metastore``,
``metastore-db``), so ``lakehouse down`` stops both; the state stays under ``<home>/metastore``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from lakehouse.config import Settings
from lakehouse.services import databases, registry
from lakehouse.services.private_file import write_private
from lakehouse.services.thrift import java_executable, port_open

SERVICE = "metastore"
DATABASE_SERVICE = "metastore-db"
DATABASE = "metastore"
HOST = "127.0.0.1"
MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
SCHEMA_TOOL = "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool"
HEAP = "-Xmx768m"


class MetastoreError(registry.ServiceError):
    """The metastore could not be prepared or started; the message says why."""


@dataclass(frozen=True)
class MetastoreStatus:
    running: bool
    uri: str
    pid: int | None = None
    database: str | None = None  # the JDBC URL of its PostgreSQL database


def metastore_dir(settings: Settings) -> Path:
    return settings.home / "metastore"


def uri(settings: Settings) -> str:
    return f"thrift://{HOST}:{settings.metastore_port}"


def _jars() -> list[Path]:
    from ingestion.jvm import JvmDependencyError, check

    try:
        return check("metastore")
    except JvmDependencyError as exc:
        raise MetastoreError(f"the metastore's jars are not resolved: {exc}", exc.hint) from exc


def _scripts_home(settings: Settings) -> Path:
    """A METASTORE_HOME holding the distribution's PostgreSQL schema scripts (unpacked once)."""
    from ingestion.jvm import lib_dir

    home = metastore_dir(settings) / "dist"
    target = home / "scripts" / "metastore" / "upgrade" / "postgres"
    if target.is_dir():
        return home
    archives = sorted(lib_dir("metastore").glob("hive-standalone-metastore-server-*-bin.tar.gz"))
    if not archives:
        raise MetastoreError("the Hive Metastore distribution (its schema scripts) is not resolved",
                             "run 'make setup' (it resolves jvm/metastore/pom.xml from Maven Central)")
    staging = home.with_name("dist.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(archives[-1]) as archive:
        members = [m for m in archive.getmembers()
                   if "/scripts/metastore/upgrade/postgres/" in m.name and m.isfile() and ".." not in m.name]
        for member in members:
            member.name = member.name.split("/", 1)[1]  # drop apache-hive-metastore-<v>-bin/
        archive.extractall(staging, members=members)  # noqa: S202 - plain files under scripts/ only
    shutil.rmtree(home, ignore_errors=True)
    staging.replace(home)
    return home


def _site_properties(settings: Settings, db: databases.Database) -> dict[str, str]:
    from ingestion.spark import s3a_confs

    warehouse = settings.warehouse if "://" in settings.warehouse else f"file://{settings.warehouse}"
    properties = {
        "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://{db.host}:{db.port}/{DATABASE}",
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": db.user,
        "javax.jdo.option.ConnectionPassword": db.password,
        "metastore.thrift.bind.host": HOST,
        "metastore.thrift.port": str(settings.metastore_port),
        "metastore.thrift.uris": uri(settings),
        "metastore.warehouse.dir": warehouse,
        "metastore.warehouse.external.dir": warehouse,
        "metastore.schema.verification": "true",
        # The standalone server has no Hive query engine: no expression-based partition
        # pruning (clients fall back to filters) and no replication dump cleaner.
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
        # Tables are stored as the client asks: Hive 4's default transformer would turn a
        # managed table of a client without Hive 4's capabilities (Spark's Hive 2.3 client,
        # Hudi's sync) into an external one and move its location.
        "metastore.metadata.transformer.class": " ",
    }
    # s3a:// table locations: the server checks them, with the clients' endpoint and credentials chain
    for key, value in s3a_confs().items():
        if key.startswith("spark.hadoop."):
            properties[key.removeprefix("spark.hadoop.")] = value
    return properties


def _write_site(settings: Settings, db: databases.Database) -> Path:
    conf = metastore_dir(settings) / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    body = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in _site_properties(settings, db).items())
    site = conf / "metastore-site.xml"
    # it holds the database password
    write_private(site, f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n')
    return conf


def _java_command(settings: Settings, conf: Path, main: str, *args: str) -> list[str]:
    classpath = os.pathsep.join([str(conf), *(str(j) for j in _jars() if j.suffix == ".jar")])
    return [java_executable(), HEAP, f"-Dlakehouse.home={settings.home}", "-cp", classpath, main, *args]


def _schema_present(db: databases.Database) -> bool:
    import psycopg

    with psycopg.connect(host=db.host, port=db.port, user=db.user, password=db.password,
                         dbname=DATABASE, autocommit=True) as conn:
        return conn.execute("select 1 from information_schema.tables where table_name = 'VERSION'").fetchone() \
            is not None


def _init_schema(settings: Settings, conf: Path, db: databases.Database) -> None:
    """Create the metastore schema with Hive's schema tool (once: it refuses an existing schema)."""
    if _schema_present(db):
        return
    env = {**os.environ, "METASTORE_HOME": str(_scripts_home(settings))}
    done = subprocess.run(_java_command(settings, conf, SCHEMA_TOOL, "-dbType", "postgres", "-initSchema"),  # noqa: S603
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    if done.returncode != 0:
        raise MetastoreError(f"Hive's schema tool could not create the metastore schema (exit {done.returncode}): "
                             f"{(done.stderr or done.stdout).strip()[-800:]}")


def _ours(pid: int, settings: Settings) -> bool:
    return registry.runs_java_main(pid, MAIN_CLASS, settings.home)


def status(settings: Settings) -> MetastoreStatus:
    record = registry.read(settings, SERVICE)
    if record is None or not record.alive or not _ours(record.pid, settings):
        return MetastoreStatus(False, uri(settings))
    db_record = registry.read(settings, DATABASE_SERVICE)
    database = None
    if db_record is not None and db_record.alive:
        port = (metastore_dir(settings) / f"{DATABASE_SERVICE}.port").read_text().strip()
        database = f"jdbc:postgresql://{HOST}:{port}/{DATABASE}"
    return MetastoreStatus(port_open(HOST, settings.metastore_port), uri(settings), record.pid, database)


def start(settings: Settings, timeout: float = 120.0) -> MetastoreStatus:
    """Start (idempotent) PostgreSQL and the metastore service; wait until it accepts connections."""
    current = status(settings)
    if current.running:
        return current
    if port_open(HOST, settings.metastore_port):
        raise MetastoreError(f"{HOST}:{settings.metastore_port} is taken by another process",
                             "stop it, or choose another port: LAKEHOUSE_METASTORE_PORT")
    _jars()
    db = databases.start_postgres(settings, root=metastore_dir(settings), name=DATABASE_SERVICE, database=DATABASE,
                                 durable=True)
    conf = _write_site(settings, db)
    _init_schema(settings, conf, db)
    log = settings.logs_dir / "metastore.log"
    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(_java_command(settings, conf, MAIN_CLASS), stdout=out,  # noqa: S603
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    registry.register(settings, SERVICE, proc.pid)
    databases.wait_port("the metastore", proc.pid, settings.metastore_port, log, timeout, MetastoreError)
    return status(settings)


def stop(settings: Settings) -> list[str]:
    """Stop the metastore, then its PostgreSQL (by their recorded PIDs)."""
    return [registry.stop(settings, SERVICE, timeout=30.0), registry.stop(settings, DATABASE_SERVICE, timeout=30.0)]


def discard(settings: Settings) -> None:
    """Remove the stopped metastore's PostgreSQL data where it is kept outside the home."""
    databases.discard(settings, metastore_dir(settings), DATABASE_SERVICE)
