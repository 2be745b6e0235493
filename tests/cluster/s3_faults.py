"""A fault-injecting reverse proxy in front of moto's S3 server (127.0.0.1, a thread of the test process).

Clients get the proxy's address as ``AWS_ENDPOINT_URL``; every request is forwarded to moto
unchanged (moto does not check signatures, so the ``Host`` the client signed is kept) unless
the current fault says otherwise:

* ``throttle_every=N``: every N-th request is answered ``503 SlowDown`` as S3 answers when a
  prefix is over its request rate (clients are expected to back off and retry);
* ``stall_every=N`` / ``stall_seconds``: every N-th request waits before it is forwarded;
* ``down=True``: every request is answered ``503 ServiceUnavailable`` (an outage).

``stop()`` closes the listening socket (connection refused), ``start()`` opens it again on
the same port. Without faults it is a meter: ``by_kind`` counts the forwarded requests and
the seconds moto took per kind (``request_kind``), which ``benchmarks/bench_s3.py`` reports.
"""

from __future__ import annotations

import http.client
import http.server
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlparse

_HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}

_ERROR_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
    "<RequestId>fault-proxy</RequestId></Error>"
)


@dataclass
class Faults:
    throttle_every: int = 0
    stall_every: int = 0
    stall_seconds: float = 0.0
    down: bool = False


class FaultyS3Proxy:
    def __init__(self, upstream: str, port: int):
        self.upstream = urlparse(upstream)
        self.port = port
        self.faults = Faults()
        self.requests = 0
        self.throttled = 0
        self.stalled = 0
        self.refused_while_down = 0
        self.history: list[tuple[str, str, str]] = []  # (verdict, method, path) of every request
        self.by_kind: dict[str, list[float]] = {}  # kind -> [forwarded requests, seconds moto took]
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args) -> None:  # quiet
                return

            def _body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _error(self, status: int, code: str, message: str) -> None:
                body = _ERROR_BODY.format(code=code, message=message).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _handle(self) -> None:
                body = self._body()
                verdict = proxy._decide()
                proxy.history.append((verdict, self.command, self.path))
                if verdict == "down":
                    self._error(503, "ServiceUnavailable", "injected outage")
                    return
                if verdict == "throttle":
                    self._error(503, "SlowDown", "Please reduce your request rate.")
                    return
                if verdict == "stall":
                    time.sleep(proxy.faults.stall_seconds)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                headers["Content-Length"] = str(len(body))
                upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=120)
                started = time.perf_counter()
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                    payload = response.read()
                    proxy._account(request_kind(self.command, self.path), time.perf_counter() - started)
                    self.send_response(response.status, response.reason)
                    for key, value in response.getheaders():
                        if key.lower() not in _HOP_HEADERS and key.lower() != "content-length":
                            self.send_header(key, value)
                    # a HEAD answer has no body but the length of the object it describes
                    length = response.getheader("Content-Length") if self.command == "HEAD" else None
                    self.send_header("Content-Length", length or str(len(payload)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(payload)
                finally:
                    upstream.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="s3-fault-proxy", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _account(self, kind: str, seconds: float) -> None:
        with self._lock:
            entry = self.by_kind.setdefault(kind, [0, 0.0])
            entry[0] += 1
            entry[1] += seconds

    def _decide(self) -> str:
        with self._lock:
            self.requests += 1
            faults = self.faults
            if faults.down:
                self.refused_while_down += 1
                return "down"
            if faults.throttle_every and self.requests % faults.throttle_every == 0:
                self.throttled += 1
                return "throttle"
            if faults.stall_every and self.requests % faults.stall_every == 0:
                self.stalled += 1
                return "stall"
            return "pass"


def request_kind(method: str, path: str) -> str:
    """What an S3 request does: LIST, HEAD, GET, PUT, DELETE, multi-object delete, multipart upload."""
    query = urlparse(path).query
    if method == "GET" and ("list-type" in query or "delimiter" in query or urlparse(path).path.count("/") <= 1):
        return "LIST"
    if method == "POST" and "delete" in query:
        return "DELETE (batch)"
    if "uploads" in query or "uploadId" in query:
        return "multipart"
    return method
