"""The warm-dbt server: imports dbt once, warms its caches, then forks one child per command.

    python -m ingestion.dbt_warm.server        (started by the client; LAKEHOUSE_HOME from the environment)

See the package docstring for what it is for. The server never runs a user's command itself:
each request is served by a child forked from the warmed-up state, which exits when the
command ends. The server holds `run/dbt-warm.lock` while it lives, listens on
`run/dbt-warm.sock` (mode 0600: this user only), registers as the service `dbt-warm`
(`lakehouse down` stops it) and logs to `logs/dbt-warm.log`.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import signal
import socket
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

from ingestion import dbt_warm
from ingestion.dbt_warm import wire

#: How often the accept loop wakes up to check for idleness, a removed home or stale code.
CHECK_SECONDS = 5.0
#: After its client went away, how long a child gets to cancel its queries (SIGINT) before it exits.
ORPHAN_GRACE_SECONDS = 15.0
#: Why a server whose code changed on disk stops serving.
STALE_REASON = "installed packages or project modules changed on disk"
#: How long a new server waits for the lock of one that is exiting (it declined a stale request).
LOCK_WAIT_SECONDS = 10.0


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {message}", flush=True)


class CodeFingerprint:
    """Modification times of the code this process has loaded: dbt and the other installed
    packages (any install or removal changes the site-packages directory) and the project's
    own modules. A server whose code changed on disk is stale and hands over to a new one."""

    def __init__(self, project_dir: Path):
        self.project_dir = project_dir
        self.paths = [Path(sysconfig.get_paths()["purelib"])] + sorted(self._project_modules())
        self.stamps = self._stamps()

    def _project_modules(self) -> set[Path]:
        found = set()
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if file and Path(file).resolve().is_relative_to(self.project_dir):
                found.add(Path(file).resolve())
        return found

    def _stamps(self) -> list[int | None]:
        stamps: list[int | None] = []
        for path in self.paths:
            try:
                stamps.append(path.stat().st_mtime_ns)
            except OSError:
                stamps.append(None)
        return stamps

    def changed(self) -> bool:
        return self._stamps() != self.stamps


def warm_up(project_dir: Path) -> None:
    """Import dbt and run `dbt parse` of the project into a scratch directory, from a saved state.

    That fills what dbt builds once per process and reuses for every later command: the
    adapter's modules, mashumaro's artifact (de)serialisers, the JSON schemas dbt validates
    project and profile files with. The full parse that saves the state runs in a forked child:
    parsing models calls dbt's Rust extractor, whose thread pool a child forked later would
    inherit as started but without its threads, and wait on forever. This process then only
    loads the saved state (nothing changed, so nothing is parsed). Its files (manifest, logs)
    go to the scratch directory.
    """
    sys.argv[0] = dbt_warm.dbt_executable()  # the project's dbt plugin acts only in a process named dbt
    from dbt.cli.main import dbtRunner

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dbt-warm-") as scratch:
        args = [
            "parse", "--project-dir", str(project_dir),
            "--profiles-dir", os.environ.get("DBT_PROFILES_DIR", str(project_dir / "profiles")),
            "--target-path", str(Path(scratch) / "target"), "--log-path", str(Path(scratch) / "logs"), "--quiet",
        ]
        pid = os.fork()
        if pid == 0:
            forget_parent_exit_work()
            success = dbtRunner().invoke(args).success
            _run_exit_functions()
            os._exit(0 if success else 1)
        _, status = os.waitpid(pid, 0)
        result = dbtRunner().invoke(args)
    if status != 0 or not result.success:
        log(f"warm-up parse failed (exit status {status}, {result.exception}); serving with colder caches")
    log(f"warm-up done in {time.perf_counter() - started:.1f} s")


class Server:
    def __init__(self, home: Path, project_dir: Path, idle_seconds: float):
        self.home, self.project_dir, self.idle_seconds = home, project_dir, idle_seconds
        self.socket_path = dbt_warm.socket_path(home)
        self.listener: socket.socket | None = None
        self.fingerprint: CodeFingerprint | None = None
        self.last_request = time.monotonic()
        self.lock: Any = None

    def serve(self) -> int:
        dbt_warm.run_dir(self.home).mkdir(parents=True, exist_ok=True)
        self.lock = open(dbt_warm.lock_path(self.home), "a")  # noqa: SIM115 - held for the process's life
        if not _lock(self.lock, LOCK_WAIT_SECONDS):
            log("another dbt-warm server holds the lock for this home; exiting")
            return 0
        from ingestion import services
        from ingestion.config import load_settings

        settings = load_settings()
        server_pid = os.getpid()
        signal.signal(signal.SIGTERM, _exit_on_signal)
        signal.signal(signal.SIGHUP, _exit_on_signal)
        try:
            warm_up(self.project_dir)
            threads = len(os.listdir("/proc/self/task"))  # native threads too, not only Python's
            if threads > 1:
                log(f"{threads - 1} other thread(s) still running after the warm-up; forking is unsafe, not serving")
                return 1
            self.fingerprint = CodeFingerprint(self.project_dir)
            self.listener = self._bind()
            services.register(settings, dbt_warm.SERVICE)
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
            gc.collect()
            gc.freeze()  # children then copy fewer pages: the collector leaves frozen objects alone
            log(f"serving on {self.socket_path}")
            self._loop()
            return 0
        finally:
            if os.getpid() != server_pid:  # a forked child unwinding here must not touch the server's files
                os._exit(1)
            if self.listener is not None:
                self.listener.close()
                with contextlib.suppress(OSError):
                    self.socket_path.unlink()
            record = services.read(settings, dbt_warm.SERVICE)
            if record is not None and record.pid == os.getpid():
                services.unregister(settings, dbt_warm.SERVICE)
            log("stopped")

    def _bind(self) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()  # a socket left by a server that was killed
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(self.socket_path))
        finally:
            os.umask(old_umask)
        listener.listen(16)
        listener.settimeout(CHECK_SECONDS)
        return listener

    def _should_stop(self) -> str | None:
        if not self.socket_path.exists():
            return "its socket (or home) was removed"
        if time.monotonic() - self.last_request > self.idle_seconds:
            return f"idle for {self.idle_seconds / 60:.0f} min"
        if self.fingerprint is not None and self.fingerprint.changed():
            return STALE_REASON
        return None

    def _loop(self) -> None:
        assert self.listener is not None
        while True:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                reason = self._should_stop()
                if reason:
                    log(f"exiting: {reason}")
                    return
                continue
            self.last_request = time.monotonic()
            if self._handle(conn) == "stale":
                log(f"exiting: {STALE_REASON} (or another interpreter asked)")
                return

    def _handle(self, conn: socket.socket) -> str:
        conn.settimeout(10)
        reader = wire.Reader(conn)
        fds: list[int] = []
        try:
            request = reader.receive(want_fds=3)
            fds = reader.fds
            if request is None or len(fds) != 3 or not isinstance(request.get("argv"), list):
                raise wire.WireError("expected a request with argv and three file descriptors")
            if request.get("python") != sys.executable or (self.fingerprint and self.fingerprint.changed()):
                wire.send(conn, {"stale": True})
                return "stale"
            pid = os.fork()
            if pid == 0:
                conn.settimeout(None)
                run_child([self.listener, self.lock], conn, reader, request, fds)
            log(f"child {pid}: dbt {' '.join(str(arg) for arg in request['argv'][:2])}")
            return "forked"
        except (OSError, wire.WireError) as exc:
            log(f"bad request: {exc}")
            with contextlib.suppress(OSError):
                wire.send(conn, {"error": str(exc)})
            return "error"
        finally:
            conn.close()
            for fd in fds:
                os.close(fd)


def _lock(file: Any, wait_seconds: float) -> bool:
    """Take the home's server lock, waiting a little for a stale server that is still exiting."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)


def _exit_on_signal(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def run_child(server_files: list[Any], conn: socket.socket, reader: wire.Reader, request: dict,
              fds: list[int]) -> NoReturn:
    """In the forked child: become the client's dbt process, run the command, report its exit code.

    `server_files` (the listening socket, the lock file) are closed first: the child must not
    keep the server's lock or socket alive after the server exits."""
    code = 1
    try:
        forget_parent_exit_work()
        for file in server_files:
            if file is not None:
                file.close()
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(line_buffering=stream.isatty())
        os.chdir(request["cwd"])
        os.umask(int(request.get("umask", 0o022)))
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()
        sys.argv = [dbt_warm.dbt_executable(), *request["argv"]]
        wire.send(conn, {"pid": os.getpid()})
        threading.Thread(target=_stop_when_client_leaves, args=(reader,), daemon=True).start()
        code = _run_dbt_cli()
    except BaseException:  # noqa: BLE001 - whatever happens, the child must not return into the server
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    _finish_child(conn, code)


#: Set in a child once its command has ended: its client may then go away without it mattering.
_child_finishing = threading.Event()


def _finish_child(conn: socket.socket, code: int) -> NoReturn:
    """Run the exit work, report `code` to the client and end the child; never returns.

    The client closes the connection as soon as it has the code, which the watcher thread would
    take for a killed client and interrupt this thread: the interrupt is ignored from here on, and
    whatever is raised, the finally ends the process (unwinding would run the server's code)."""
    try:
        _child_finishing.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _run_exit_functions()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        with contextlib.suppress(Exception):
            wire.send(conn, {"exit": code})
    finally:
        os._exit(code)


def forget_parent_exit_work() -> None:
    """In a forked child: drop the exit work the server registered, as multiprocessing does in its
    forked workers. Otherwise the child would run it when it ends, e.g. a temporary directory's
    clean-up (removing the server's directory) or the finalizers of the server's semaphores.
    The child's own exit work (dbt's, its semaphores') is registered afresh and runs."""
    import atexit
    import logging
    from multiprocessing import util

    util._finalizer_registry.clear()
    util._run_after_forkers()
    atexit._clear()
    atexit.register(util._exit_function)
    atexit.register(logging.shutdown)


def _run_exit_functions() -> None:
    """What a normal exit runs (dbt's and multiprocessing's clean-ups), before a child's os._exit."""
    import atexit

    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()


def _run_dbt_cli() -> int:
    """dbt's console entry point, as the `dbt` executable runs it; its exit status as a number."""
    from dbt.cli.main import cli

    try:
        cli()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    return 0


def _stop_when_client_leaves(reader: wire.Reader) -> None:
    """The client sends nothing after its request: end of stream means it is gone (killed)."""
    with contextlib.suppress(Exception):
        while reader.receive() is not None:
            pass
    if _child_finishing.is_set():
        return
    os.kill(os.getpid(), signal.SIGINT)  # dbt cancels its running queries on an interrupt
    time.sleep(ORPHAN_GRACE_SECONDS)
    os._exit(130)


def main() -> int:
    from ingestion.config import PROJECT_DIR, load_settings

    home = load_settings().home
    idle_minutes = float(os.environ.get(dbt_warm.IDLE_SWITCH, dbt_warm.DEFAULT_IDLE_MINUTES))
    return Server(home, PROJECT_DIR, idle_minutes * 60).serve()


if __name__ == "__main__":
    sys.exit(main())
