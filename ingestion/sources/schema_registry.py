"""A client of a Confluent-compatible schema registry: writer schemas by id, cached.

The ingestion needs one call, ``GET {url}/schemas/ids/{id}`` -> ``{"schema": "<Avro schema
as a JSON string>"}``, which Confluent's Schema Registry and Apicurio's ``ccompat`` API
(``.../apis/ccompat/v7``) both answer. A schema id names one schema for ever, so an
answer is cached by id for the life of the client (one per parse task). Failures:

* 404 (or a registry error code 40403): the id is unknown -> ``unknown_schema_id``;
* no answer (refused, timeout, 5xx, 429): tried again with exponential backoff (``backoff``
  doubling up to ``max_backoff``) for at least ``attempts`` tries and ``wait_seconds``, so an
  outage shorter than that delays the batch instead of dead-lettering its records; then
  ``registry_unavailable``. The client answers that at once for ``retry_after`` seconds (a task
  does not wait once per record for a registry that is down), then asks the registry again.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from ingestion.cdc.avro_records import AvroSchema, AvroSchemaError, decode_schema
from ingestion.cdc.kafka_values import SchemaLookupError
from ingestion.cdc.parser import INCOMPATIBLE_SCHEMA, REGISTRY_UNAVAILABLE, UNKNOWN_SCHEMA_ID


class SchemaRegistryClient:
    """Writer schemas by id from ``url`` (the registry's Confluent-compatible API root)."""

    def __init__(self, url: str, *, timeout: float = 5.0, attempts: int = 3, backoff: float = 0.5,
                 max_backoff: float = 5.0, wait_seconds: float = 0.0, retry_after: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.wait_seconds = wait_seconds
        self.retry_after = retry_after
        self._clock = clock
        self._sleep = sleep
        self._schemas: dict[int, AvroSchema] = {}
        self._failures: dict[int, SchemaLookupError] = {}
        self._down: SchemaLookupError | None = None
        self._down_until = 0.0

    def schema(self, schema_id: int) -> AvroSchema:
        cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        if schema_id in self._failures:
            raise self._failures[schema_id]
        if self._down is not None:
            if self._clock() < self._down_until:
                raise self._down
            self._down = None  # down long enough ago: ask again
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
        started = self._clock()
        attempt = 0
        while True:
            attempt += 1
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
                if exc.code < 500 and exc.code != 429:  # refused (401, 403): waiting does not help
                    break
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                problem = str(getattr(exc, "reason", exc))
            except (ValueError, KeyError) as exc:
                problem = f"an answer without a schema ({type(exc).__name__}: {exc})"
                break
            left = started + self.wait_seconds - self._clock()
            if attempt >= self.attempts and left <= 0:
                break
            delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
            self._sleep(delay if attempt < self.attempts else min(delay, left))
        waited = self._clock() - started
        self._down = SchemaLookupError(REGISTRY_UNAVAILABLE, f"the schema registry {self.url} did not answer for "
                                       f"schema id {schema_id} after {attempt} tries in {waited:.0f} s ({problem})")
        self._down_until = self._clock() + self.retry_after
        raise self._down
