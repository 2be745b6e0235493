"""A client of a Confluent-compatible schema registry: writer schemas by id, cached.

The ingestion needs one call, ``GET {url}/schemas/ids/{id}`` -> ``{"schema": "<Avro schema
as a JSON string>"}``, which Confluent's Schema Registry and Apicurio's ``ccompat`` API
(``.../apis/ccompat/v7``) both answer. A schema id names one schema for ever, so an
answer is cached by id for the life of the client (one per parse task). Failures:

* 404 (or a registry error code 40403): the id is unknown -> ``unknown_schema_id``;
* no answer (refused, timeout, 5xx) after ``attempts`` tries -> ``registry_unavailable``;
  the client then answers that at once for the rest of its life (a task does not wait
  once per record for a registry that is down).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from ingestion.cdc.avro_records import AvroSchema, AvroSchemaError, decode_schema
from ingestion.cdc.kafka_values import SchemaLookupError
from ingestion.cdc.parser import INCOMPATIBLE_SCHEMA, REGISTRY_UNAVAILABLE, UNKNOWN_SCHEMA_ID


class SchemaRegistryClient:
    """Writer schemas by id from ``url`` (the registry's Confluent-compatible API root)."""

    def __init__(self, url: str, *, timeout: float = 5.0, attempts: int = 3, backoff: float = 0.5):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self._schemas: dict[int, AvroSchema] = {}
        self._failures: dict[int, SchemaLookupError] = {}
        self._down: SchemaLookupError | None = None

    def schema(self, schema_id: int) -> AvroSchema:
        cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        if schema_id in self._failures:
            raise self._failures[schema_id]
        if self._down is not None:
            raise self._down
        text = self._fetch(schema_id)
        try:
            schema = decode_schema(json.loads(text))
        except (ValueError, AvroSchemaError) as exc:
            error = SchemaLookupError(INCOMPATIBLE_SCHEMA, f"schema id {schema_id} from {self.url} is not a usable "
                                      f"Avro schema ({exc})")
            self._failures[schema_id] = error
            raise error from None
        self._schemas[schema_id] = schema
        return schema

    def _fetch(self, schema_id: int) -> str:
        address = f"{self.url}/schemas/ids/{schema_id}"
        problem = ""
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(self.backoff * attempt)
            try:
                request = urllib.request.Request(address, headers={"Accept": "application/json"})
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - configured URL
                    body = json.loads(response.read().decode("utf-8"))
                return str(body["schema"])
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    error = SchemaLookupError(UNKNOWN_SCHEMA_ID, f"the schema registry {self.url} has no schema id "
                                              f"{schema_id} (404)")
                    self._failures[schema_id] = error
                    raise error from None
                problem = f"HTTP {exc.code}"
                if exc.code < 500:
                    break
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                problem = str(getattr(exc, "reason", exc))
            except (ValueError, KeyError) as exc:
                problem = f"an answer without a schema ({type(exc).__name__}: {exc})"
                break
        self._down = SchemaLookupError(REGISTRY_UNAVAILABLE, f"the schema registry {self.url} did not answer for "
                                       f"schema id {schema_id} after {self.attempts} tries ({problem})")
        raise self._down
