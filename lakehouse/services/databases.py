"""Real source databases on loopback: PostgreSQL (logical decoding) and MariaDB (binlog ROW).

Debian's ``postgresql`` and ``mariadb-server`` packages, each started in its own data
directory under ``$LAKEHOUSE_HOME/sources/<name>`` on a port of 127.0.0.1 (TCP only, no
system service touched), so Debezium's connectors read a real write-ahead log / binlog:

* PostgreSQL: ``wal_level=logical`` (the ``pgoutput`` plugin Debezium uses), database
  ``tickit``; the superuser ``lakehouse`` with a random password;
* MariaDB: ``binlog_format=ROW``, ``binlog_row_image=FULL``, a server id, database
  ``ecomm``; the user ``lakehouse``@``127.0.0.1`` with the replication privileges.

Passwords are generated on first start and kept in ``<home>/sources/<name>.password`` (mode
600), never in the repository. PostgreSQL refuses to run as root: as root, its data
directory belongs to the ``postgres`` system user and the server runs as that user
(``runuser``), see ``postgres_data_dir``. PIDs are
recorded through the project's registry, so ``lakehouse down`` stops both.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from lakehouse.config import Settings
from lakehouse.services import registry
from lakehouse.services.ports import free_port
from lakehouse.services.private_file import write_private
from lakehouse.services.thrift import port_open, tail

USER = "lakehouse"
HOST = "127.0.0.1"
#: Where PostgreSQL's data goes when its user cannot enter the home (see ``postgres_data_dir``).
EXTERNAL_ROOT = Path("/var/tmp/lakehouse-postgres")


class DatabaseError(registry.ServiceError):
    """A source database could not be prepared or started; the message says why."""


@dataclass(frozen=True)
class Database:
    """One running source database: where it listens and how to log in."""

    kind: str  # "postgres" or "mariadb"
    host: str
    port: int
    user: str
    password: str
    database: str
    data_dir: Path
    pid: int


def sources_dir(settings: Settings) -> Path:
    return settings.home / "sources"


def _password(data_dir: Path) -> str:
    path = data_dir.parent / f"{data_dir.name}.password"
    if not path.exists():
        write_private(path, secrets.token_urlsafe(18) + "\n")
    return path.read_text().strip()


def _run(command: list[str], what: str, timeout: float = 180.0) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)  # noqa: S603
    if done.returncode != 0:
        raise DatabaseError(f"{what} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-600:]}")


def _port_file(data_dir: Path) -> Path:
    return data_dir.parent / f"{data_dir.name}.port"


def _port(data_dir: Path, port: int | None) -> int:
    """The port this data directory listens on: the given one, else the last one, else a free one."""
    path = _port_file(data_dir)
    if port is None and path.exists():
        port = int(path.read_text())
    port = port or free_port(HOST)
    path.write_text(f"{port}\n")
    return port


def wait_port(name: str, pid: int, port: int, log: Path, timeout: float,
              error: type[registry.ServiceError] = DatabaseError) -> None:
    """Until the server ``pid`` listens on ``HOST:port``; ``error`` (last log lines) when it exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if registry.process_start_ticks(pid) is None:
            raise error(f"{name} exited while starting; last log lines:\n{tail(log)}", f"full log: {log}")
        if port_open(HOST, port):
            return
        time.sleep(0.2)
    raise error(f"{name} did not open {HOST}:{port} within {timeout:.0f}s; last log lines:\n{tail(log)}",
                f"full log: {log}")


# --- PostgreSQL ---------------------------------------------------------------------------

def postgres_bin(tool: str) -> str:
    """A PostgreSQL server program (initdb, postgres) of the newest installed Debian version."""
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise DatabaseError(f"PostgreSQL's {tool} was not found under /usr/lib/postgresql",
                            "run 'make setup' (it installs Debian's postgresql package)")
    return str(found[-1])


def _as_postgres_user(command: list[str]) -> list[str]:
    """PostgreSQL will not run as root: as root, run it as the ``postgres`` system user."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


def _postgres_owner(path: Path) -> None:
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(path, account.pw_uid, account.pw_gid)


def _postgres_reaches(path: Path) -> bool:
    """True when the user PostgreSQL runs as can enter ``path`` (as root: the ``postgres`` user)."""
    if os.geteuid() != 0:
        return True
    done = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(path)],  # noqa: S607
                          capture_output=True, check=False)
    return done.returncode == 0


def _instance_key(data_dir: Path, legacy: str) -> str:
    """A name for this data directory's server, new whenever its home is made again.

    Kept in ``<data_dir>.id`` beside the password: a home deleted and made again at the same
    path gets a new key, so it never meets the data (and the password) its predecessor left
    outside it. A home from before the key existed (a password but no key) keeps ``legacy``,
    the directory it already has.
    """
    path = data_dir.parent / f"{data_dir.name}.id"
    if not path.exists():
        had_password = data_dir.parent.joinpath(f"{data_dir.name}.password").exists()
        path.write_text((legacy if had_password else secrets.token_hex(8)) + "\n")
    return path.read_text().strip()


def postgres_data_dir(settings: Settings, root: Path | None = None, name: str = "postgres") -> Path:
    """``<root>/<name>`` (root: ``<home>/sources``); as root under a home the ``postgres`` user cannot
    enter (a private temporary directory, say), ``/var/tmp/lakehouse-postgres/<key>/<name>`` with the
    key of ``_instance_key``: ``discard`` removes it."""
    root = root or sources_dir(settings)
    if _postgres_reaches(root):
        return root / name
    key = str(settings.home) if root == sources_dir(settings) else str(root)
    legacy = hashlib.sha256(key.encode()).hexdigest()[:16]
    return EXTERNAL_ROOT / _instance_key(root / name, legacy) / name


def start_postgres(settings: Settings, port: int | None = None, timeout: float = 60.0, *,
                   root: Path | None = None, name: str = "postgres", database: str = "tickit",
                   durable: bool = False) -> Database:
    """Start (idempotent) a PostgreSQL server of this home, logical decoding on, with ``database``.

    The default is the PostgreSQL source (``<home>/sources/postgres``, database ``tickit``);
    ``root``/``name`` give another server its own data directory, password, port and PID file
    (the shared metastore's database, ``lakehouse.services.metastore``). ``durable``: PostgreSQL's
    own ``fsync`` and full-page writes stay on (the metastore's catalog must survive a power cut);
    the demo's source database runs without them.
    """
    root = root or sources_dir(settings)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    data = postgres_data_dir(settings, root, name)  # before the password: a new home gets a new key
    password = _password(root / name)
    record = registry.read(settings, name)
    if record is not None and record.alive:
        return Database("postgres", HOST, _port(root / name, None), USER, password, database, data, record.pid)
    port = _port(root / name, port)
    if not (data / "PG_VERSION").exists():
        data.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        _postgres_owner(data.parent)
        data.mkdir(mode=0o700, exist_ok=True)
        _postgres_owner(data)
        pwfile = data.parent / "initdb.pwfile"
        write_private(pwfile, password + "\n")
        _postgres_owner(pwfile)
        try:
            _run(_as_postgres_user([postgres_bin("initdb"), "-D", str(data), "-U", USER, "--pwfile", str(pwfile),
                                    "--auth=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"]), "initdb")
        finally:
            pwfile.unlink(missing_ok=True)
    log = settings.logs_dir / f"{name}.log"
    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    options = ["-c", f"listen_addresses={HOST}", "-c", f"port={port}", "-c", "unix_socket_directories=",
               "-c", "wal_level=logical", "-c", "max_replication_slots=8", "-c", "max_wal_senders=8",
               *([] if durable else ["-c", "fsync=off", "-c", "full_page_writes=off"])]
    with open(log, "ab") as out:
        proc = subprocess.Popen(  # noqa: S603 - fixed command
            _as_postgres_user([postgres_bin("postgres"), "-D", str(data), *options]),
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    # runuser stays the parent of postgres and passes signals on: its PID is the one to stop
    registry.register(settings, name, proc.pid)
    wait_port("PostgreSQL", proc.pid, port, log, timeout)
    server = Database("postgres", HOST, port, USER, password, database, data, proc.pid)
    _create_postgres_database(server)
    return server


def _create_postgres_database(database: Database) -> None:
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            conn = psycopg.connect(host=database.host, port=database.port, user=database.user,
                                   password=database.password, dbname="postgres", autocommit=True)
            break
        except psycopg.OperationalError:  # still starting up
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    with conn:
        if conn.execute("select 1 from pg_database where datname = %s", (database.database,)).fetchone() is None:
            conn.execute(f'create database "{database.database}"')


# --- MariaDB ------------------------------------------------------------------------------

def start_mariadb(settings: Settings, port: int | None = None, timeout: float = 60.0) -> Database:
    """Start (idempotent) the MariaDB source: database ``ecomm``, binlog in ROW format."""
    name = "mariadb"
    root = sources_dir(settings)
    data = root / name
    root.mkdir(parents=True, exist_ok=True)
    password = _password(data)
    record = registry.read(settings, name)
    if record is not None and record.alive:
        return Database(name, HOST, _port(data, None), USER, password, "ecomm", data, record.pid)
    port = _port(data, port)
    server = shutil.which("mariadbd", path="/usr/sbin:/usr/bin") or shutil.which("mysqld", path="/usr/sbin:/usr/bin")
    install = shutil.which("mariadb-install-db")
    if not server or not install:
        raise DatabaseError("MariaDB's server (mariadbd, mariadb-install-db) is not installed",
                            "run 'make setup' (it installs Debian's mariadb-server package)")
    user = ["--user=root"] if os.geteuid() == 0 else []
    if not (data / "mysql").exists():
        data.mkdir(mode=0o700, exist_ok=True)
        _run([install, f"--datadir={data}", "--auth-root-authentication-method=socket",
              "--skip-test-db", *user], "mariadb-install-db")
    init = root / "mariadb-init.sql"
    write_private(init,
        f"CREATE DATABASE IF NOT EXISTS ecomm;\n"
        f"CREATE USER IF NOT EXISTS '{USER}'@'{HOST}' IDENTIFIED BY '{password}';\n"
        f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'{HOST}' WITH GRANT OPTION;\n"
    )
    log = settings.logs_dir / "mariadb.log"
    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    options = [f"--datadir={data}", f"--port={port}", f"--bind-address={HOST}", f"--socket={root / 'mariadb.sock'}",
               f"--pid-file={root / 'mariadb.pid'}", f"--init-file={init}", "--skip-name-resolve",
               "--log-bin=binlog", "--binlog-format=ROW", "--binlog-row-image=FULL", "--server-id=1",
               "--innodb-flush-log-at-trx-commit=2", "--innodb-buffer-pool-size=64M", f"--log-error={log}",
               "--default-time-zone=+00:00", *user]
    proc = subprocess.Popen(  # noqa: S603 - fixed command
        [server, "--no-defaults", *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL, start_new_session=True)
    registry.register(settings, name, proc.pid)
    wait_port("MariaDB", proc.pid, port, log, timeout)
    return Database(name, HOST, port, USER, password, "ecomm", data, proc.pid)


def stop(settings: Settings, name: str) -> str:
    """Stop one source database this home started (by its recorded PID)."""
    return registry.stop(settings, name, timeout=30.0)


def discard(settings: Settings, root: Path | None = None, name: str = "postgres") -> None:
    """Remove a stopped PostgreSQL's data kept outside the home (``postgres_data_dir``'s fallback)."""
    root = root or sources_dir(settings)
    if not (root / f"{name}.password").exists():  # never started by this home
        return
    data = postgres_data_dir(settings, root, name)
    if not data.is_relative_to(settings.home):
        shutil.rmtree(data.parent, ignore_errors=True)


def running(settings: Settings, name: str) -> Database | None:
    """The source database ``name`` (postgres, mariadb) if this home started it and it still runs."""
    record = registry.read(settings, name)
    if record is None or not record.alive:
        return None
    files = sources_dir(settings) / name
    database = "tickit" if name == "postgres" else "ecomm"
    data = postgres_data_dir(settings) if name == "postgres" else files
    return Database(name, HOST, _port(files, None), USER, _password(files), database, data, record.pid)
