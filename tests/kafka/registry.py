"""A small schema registry for the tests, speaking the Confluent REST subset the project uses.

Not a real registry: Apicurio Registry's runnable jar (``io.apicurio:apicurio-registry-app``
with the ``runner`` classifier, 3.3.3) is not on Maven Central, and Confluent's Schema
Registry is on none of the reachable package registries. This one answers exactly what
the ingestion and the simulator ask, as Confluent's API and Apicurio's ``ccompat`` API do:

* ``GET /schemas/ids/{id}`` -> ``{"schema": "<schema JSON as a string>"}``, or 404 with
  ``{"error_code": 40403, "message": "Schema not found"}``;
* ``POST /subjects/{subject}/versions`` with ``{"schema": "..."}`` -> ``{"id": N}`` (the same
  schema text gets the same id, as in Confluent's registry).

``forget(id)`` makes an id unknown (a 404), ``stop()`` takes the registry down; it binds
127.0.0.1 on a free port.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class SmallRegistry:
    def __init__(self) -> None:
        self.schemas: dict[int, str] = {}
        self.requests: list[str] = []
        self._lock = threading.Lock()
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                return

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                registry.requests.append(f"GET {self.path}")
                parts = self.path.strip("/").split("/")
                if len(parts) == 3 and parts[:2] == ["schemas", "ids"] and parts[2].isdigit():
                    text = registry.schemas.get(int(parts[2]))
                    if text is not None:
                        self._send(200, {"schema": text})
                        return
                    self._send(404, {"error_code": 40403, "message": "Schema not found"})
                    return
                self._send(404, {"error_code": 404, "message": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                registry.requests.append(f"POST {self.path}")
                parts = self.path.strip("/").split("/")
                if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                    self._send(200, {"id": registry.register(body["schema"])})
                    return
                self._send(404, {"error_code": 404, "message": "not found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def register(self, text: str) -> int:
        canonical = json.dumps(json.loads(text), sort_keys=True)
        with self._lock:
            for schema_id, known in self.schemas.items():
                if json.dumps(json.loads(known), sort_keys=True) == canonical:
                    return schema_id
            schema_id = len(self.schemas) + 1
            self.schemas[schema_id] = text
            return schema_id

    def forget(self, schema_id: int) -> None:
        self.schemas.pop(schema_id, None)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
