"""The managed Thrift server: answers, binds to loopback only, isolates instances."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from lakehouse.services import thrift
from tests.conftest import free_port, process_running, settings_for
from tests.foundation.jvm_counters import PerfDataError, read_perf_counters

LAKEHOUSE = str(Path(sys.executable).parent / "lakehouse")


def listening_addresses(pid: int) -> set[str]:
    """Local addresses of every TCP socket that ``pid`` listens on (from /proc, not from our code)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    addresses = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A = LISTEN
                addresses.add(local.split(":")[0][:width])
    return addresses


IPV4_LOOPBACK = "0100007F"  # 127.0.0.1 in /proc/net/tcp byte order
IPV6_MAPPED_LOOPBACK = "0000000000000000FFFF00000100007F"


def test_server_answers_queries(thrift_server):
    assert thrift_server.sql("SELECT 1 + 1") == [(2,)]
    assert thrift_server.sql("SET spark.sql.session.timeZone")[0][1] == "UTC"
    # Hudi's SQL extension and catalog, and no cached relations (every query sees the latest commit)
    assert "HoodieSparkSessionExtension" in thrift_server.sql("SET spark.sql.extensions")[0][1]
    assert thrift_server.sql("SET spark.sql.filesourceTableRelationCacheSize")[0][1] == "0"


def test_server_listens_on_loopback_only(thrift_server):
    addresses = listening_addresses(thrift_server.pid())
    assert addresses, "the server listens on no socket"
    assert addresses <= {IPV4_LOOPBACK, IPV6_MAPPED_LOOPBACK}, addresses


def test_start_is_idempotent(thrift_server):
    before = thrift_server.pid()
    st = thrift.start(thrift_server.settings)
    assert st.running and st.answering and st.pid == before


def test_embedded_metastore_is_primed_before_use_and_left_clean(thrift_server):
    """The primer's writes ran one after the other before start returned; nothing of them remains."""
    log = thrift.log_file(thrift_server.settings).read_text(errors="replace")
    submitted = [line for line in log.splitlines() if "SparkExecuteStatementOperation: Submitting query" in line]
    primer = [i for i, line in enumerate(submitted) if thrift.PRIMER_DATABASE in line]
    assert len(primer) == len(thrift.PRIMER_STATEMENTS), primer
    assert primer == list(range(primer[0], primer[0] + len(primer)))  # one after the other
    assert "DROP DATABASE" in submitted[primer[-1]]
    assert thrift.PRIMER_DATABASE not in {r[0] for r in thrift_server.sql("SHOW DATABASES")}
    assert not list(thrift_server.settings.home.rglob(f"{thrift.PRIMER_DATABASE}*"))


#: Hive logs this line each time it builds the embedded metastore's persistence manager factory.
FACTORY_BUILT = "Setting MetaStore object pin classes"


def test_hudi_writes_keep_the_one_embedded_metastore_factory(thrift_server):
    """Hudi's SQL writes open their own metastore clients in the server; each used to close and
    rebuild the embedded metastore's factory (its settings differed from Spark's client's),
    bringing back DataNucleus' first-use race the primer removes. A Hudi table written twice
    through the server must leave the factory built once since the server started."""
    sql = thrift_server.sql
    sql("CREATE DATABASE IF NOT EXISTS factory_check")
    try:
        sql("CREATE TABLE factory_check.t (id INT, v STRING, p STRING) USING hudi PARTITIONED BY (p)"
            " TBLPROPERTIES (primaryKey = 'id', type = 'cow')")
        sql("INSERT INTO factory_check.t VALUES (1, 'a', 'x')")
        sql("INSERT INTO factory_check.t VALUES (2, 'b', 'y')")
        assert sql("SELECT id, v FROM factory_check.t ORDER BY id") == [(1, "a"), (2, "b")]
    finally:
        sql("DROP DATABASE factory_check CASCADE")
    log = thrift.log_file(thrift_server.settings).read_text(errors="replace")
    this_start = log.rsplit("Running Spark version", 1)[-1]  # the log is appended to at each start
    built = [line for line in this_start.splitlines() if FACTORY_BUILT in line]
    assert len(built) == 1, built


def test_busy_port_is_refused_with_clear_message(thrift_server, tmp_path):
    other = settings_for(tmp_path / "other-home", thrift_server.port)
    with pytest.raises(thrift.ThriftError, match=rf"port 127.0.0.1:{thrift_server.port} is already in use"):
        thrift.start(other, timeout=30)
    assert not (tmp_path / "other-home" / "run" / "thrift.pid").exists()


def test_stop_without_a_started_server_touches_nothing(thrift_server, tmp_path):
    other = settings_for(tmp_path / "idle-home", free_port())
    assert "not running" in thrift.stop(other)
    assert thrift.status(thrift_server.settings).answering


def jvm_arguments(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def test_second_instance_runs_side_by_side(thrift_server, tmp_path, monkeypatch):
    """A second home's server beside the first; started with a user's JVM option, which must not
    replace the project's own (the home marker ``stop`` finds the server by, Derby's home). Hive's
    session resources directory is kept in the home: nothing is left in the system temp directory."""
    user_option = "-Dlakehouse.test.user_option=kept"
    monkeypatch.setenv("LAKEHOUSE_SPARK_CONF", f'{{"spark.driver.extraJavaOptions": "{user_option}"}}')
    second = settings_for(tmp_path / "second", free_port())
    temp_resources = set(Path(tempfile.gettempdir()).glob("*_resources"))
    try:
        status = thrift.start(second, timeout=300)
        arguments = jvm_arguments(status.pid)
        assert user_option in arguments
        assert f"-Dlakehouse.home={second.home}" in arguments
        assert f"-Dderby.system.home={second.home / 'logs'}" in arguments
        thrift.run_sql(second.thrift_host, second.thrift_port, "CREATE DATABASE IF NOT EXISTS only_in_second")
        names = {r[0] for r in thrift.run_sql(second.thrift_host, second.thrift_port, "SHOW DATABASES")}
        assert "only_in_second" in names
        first_names = {r[0] for r in thrift_server.sql("SHOW DATABASES")}
        assert "only_in_second" not in first_names
        assert (tmp_path / "second" / "metastore_db").is_dir()
        # Hive's session resources directory is in the home, not left in the system temp directory
        assert list((second.home / "hive" / "resources").glob("*_resources"))
    finally:
        message = thrift.stop(second)
    assert "stopped pid" in message
    assert not thrift.status(second).running
    assert not process_running(status.pid)
    assert thrift.status(thrift_server.settings).answering
    assert set(Path(tempfile.gettempdir()).glob("*_resources")) <= temp_resources


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([LAKEHOUSE, *args], capture_output=True, text=True, env=env, timeout=120)


def test_unknown_subcommand_is_bad_usage():
    result = _cli("no-such-command")
    assert result.returncode == 2
    assert "invalid choice: 'no-such-command'" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_java_gives_one_clear_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env.update(PATH="/nonexistent", LAKEHOUSE_HOME=str(tmp_path), LAKEHOUSE_THRIFT_PORT=str(free_port()))
    result = _cli("thrift", "start", env=env)
    assert result.returncode == 1
    assert result.stderr.startswith("error: Java was not found")
    assert "Traceback" not in result.stderr


def test_cli_status_reports_running_server(thrift_server):
    env = {**os.environ, **thrift_server.env}
    result = _cli("thrift", "status", env=env)
    assert result.returncode == 0
    assert f"127.0.0.1:{thrift_server.port}" in result.stdout and "answering" in result.stdout


def test_hive_function_registry_initializes_in_the_server(thrift_server):
    """Closing a session can run Hive's FunctionRegistry initializer in the server.

    Its initializer needs Hive's LLAP interfaces (``LlapSigner$Signable``); without them the
    server hangs on later session closes (SPARK-51041). The pyspark 3.5 wheel ships
    ``hive-llap-common``; loading the class through the server proves the initializer
    completes in that JVM.
    """
    rows = thrift_server.sql(
        "SELECT reflect('java.lang.Class', 'forName', 'org.apache.hadoop.hive.ql.exec.FunctionRegistry')"
    )
    assert rows == [("class org.apache.hadoop.hive.ql.exec.FunctionRegistry",)]


def test_many_sessions_open_and_close_concurrently(thrift_server):
    """dbt opens and closes a session per thread and per node: the server must keep up."""
    import concurrent.futures

    def one_session(i: int) -> list[tuple]:
        return thrift_server.sql(f"SELECT {i}")

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(one_session, i) for i in range(40)]
        done, pending = concurrent.futures.wait(futures, timeout=120)
    assert not pending, f"{len(pending)} of 40 sessions did not finish within 120 s"
    assert sorted(f.result()[0][0] for f in done) == list(range(40))
    assert thrift_server.sql("SELECT 1") == [(1,)]


def loaded_classes(pid: int) -> int:
    """Classes the JVM ``pid`` has loaded so far (its perf counter, read from its hsperfdata file)."""
    return int(read_perf_counters(pid)["java.cls.loadedClasses"])


def test_server_reuses_generated_code_after_many_other_statements(thrift_server):
    """Spark caches the classes it generates per query in 100 entries by default, too few for
    one dbt build; the server keeps thrift.CODEGEN_CACHE_ENTRIES, so a statement that ran
    before, followed by more than 100 different ones, runs again without generating (and
    loading) new classes. (Evicted, each would load its classes again: at least one per
    statement, as the first pass shows; a few classes may load for unrelated reasons.)"""
    pid = thrift_server.pid()
    try:
        loaded_classes(pid)
    except PerfDataError as error:  # a JVM started with -XX:-UsePerfData, or /tmp not shared
        pytest.skip(f"cannot read the server's class-loading counter: {error}")
    # an int literal is written into the generated code, so each statement has its own classes
    statements = [f"SELECT sum(id * {k}) FROM range(10)" for k in range(7_001, 7_131)]
    with thrift.connect(thrift_server.host, thrift_server.port) as conn:
        cursor = conn.cursor()

        def run(batch: list[str]) -> int:
            before = loaded_classes(pid)
            for statement in batch:
                cursor.execute(statement)
                cursor.fetchall()
            return loaded_classes(pid) - before

        first = run(statements)
        repeats = statements[:30]
        again = run(repeats)
    assert first >= len(statements), f"the statements generated only {first} classes: the check proves nothing"
    assert again < len(repeats), (
        f"running {len(repeats)} earlier statements again loaded {again} classes: their generated code was evicted"
    )
