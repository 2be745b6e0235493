"""A small schema registry for the tests, speaking the Confluent REST subset the project uses.

Not a real registry: Apicurio Registry's runnable jar (``io.apicurio:apicurio-registry-app``
with the ``runner`` classifier, 3.3.3) is not on Maven Central, and Confluent's Schema
Registry is on none of the reachable package registries. This one answers exactly what
the ingestion and the simulator ask, as Confluent's API and Apicurio's ``ccompat`` API do:

* ``GET /schemas/ids/{id}`` (also under Apicurio's ``/apis/ccompat/v6`` or ``v7``) ->
  ``{"schema": "<schema JSON as a string>"}``, or 404 with
  ``{"error_code": 40403, "message": "Schema not found"}``;
* ``POST /subjects/{subject}/versions`` with ``{"schema": "..."}`` -> ``{"id": N}`` (the same
  schema text gets the same id, as in Confluent's registry).

Kafka Connect's Avro converter here is Apicurio's (``apicurio-registry-utils-converter``, set
to the Confluent wire format), whose client registers schemas through Apicurio's v2 REST API,
so the registry also answers the one call it makes:

* ``POST /apis/registry/v2/groups/{group}/artifacts`` (artifact id in ``X-Registry-ArtifactId``,
  the schema as the body, ``ifExists=RETURN_OR_UPDATE``) -> the artifact's metadata, with
  ``globalId`` = ``contentId`` = the id ``GET /schemas/ids/{id}`` serves (the converter writes
  the ``contentId`` with ``apicurio.registry.use-id=contentId``).

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
                if parts[:2] == ["apis", "ccompat"] and len(parts) > 3:  # Apicurio's Confluent-compatible API
                    parts = parts[3:]
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
                parts = self.path.split("?", 1)[0].strip("/").split("/")
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
                    self._send(200, {"id": registry.register(json.loads(body)["schema"])})
                    return
                if parts[:4] == ["apis", "registry", "v2", "groups"] and len(parts) == 6 and parts[5] == "artifacts":
                    schema_id = registry.register(body.decode())
                    self._send(200, {"groupId": parts[4], "id": self.headers.get("X-Registry-ArtifactId"),
                                     "version": str(schema_id), "type": "AVRO", "state": "ENABLED",
                                     "globalId": schema_id, "contentId": schema_id, "labels": [],
                                     "properties": {}, "references": [],
                                     "createdOn": "2026-01-01T00:00:00Z", "modifiedOn": "2026-01-01T00:00:00Z"})
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
