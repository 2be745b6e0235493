"""Alert hook: a JSON POST to ``LAKEHOUSE_ALERT_WEBHOOK_URL`` (Slack incoming-webhook compatible).

The payload carries Slack's ``text`` plus structured fields (``event``, ``job``, ``run_id``,
``failed_step``, ``log_excerpt``, ``stale_sources``) for other receivers; secrets are redacted
from the error and the log excerpt (``lakehouse.jobs.redaction``). Posting never
raises: an unreachable webhook is logged and recorded in the run history, and the
job's own outcome stands.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from lakehouse.jobs.redaction import redact

log = logging.getLogger(__name__)

Poster = Callable[[str, dict[str, Any]], None]


def post_json(url: str, payload: dict[str, Any], timeout: float = 10.0, attempts: int = 3) -> None:
    """POST ``payload`` as JSON; retries twice on network errors; raises the last error."""
    body = json.dumps(payload).encode("utf-8")
    last: Exception | None = None
    for attempt in range(attempts):
        request = urllib.request.Request(
            url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - configured URL
                response.read()
            return
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                raise
            last = exc
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        time.sleep(0.5 * (attempt + 1))
    assert last is not None
    raise last


class Alerter:
    """Sends alerts to one webhook (or nowhere when no URL is configured)."""

    def __init__(self, url: str | None, poster: Poster = post_json):
        self.url = url
        self._poster = poster

    def send(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one alert; returns a record of what happened for the run history."""
        outcome = {"event": payload.get("event"), "sent": False, "error": None}
        if not self.url:
            outcome["error"] = "no webhook configured (LAKEHOUSE_ALERT_WEBHOOK_URL)"
            log.warning("alert not sent (%s): %s", outcome["error"], payload.get("text"))
            return outcome
        try:
            self._poster(self.url, payload)
            outcome["sent"] = True
        except Exception as exc:  # noqa: BLE001 - an alert failure must not mask the job result
            outcome["error"] = f"{type(exc).__name__}: {exc}"
            log.error("alert webhook failed: %s", outcome["error"])
        return outcome


def failure_payload(
    job: str, run_id: str, status: str, failed_step: str | None, error: str | None, log_excerpt: str
) -> dict[str, Any]:
    """The ``job_failed`` alert; the error and the log excerpt leave the machine redacted (``redaction``)."""
    error = redact(error) if error else error
    log_excerpt = redact(log_excerpt)
    text = (
        f":red_circle: lakehouse job *{job}* {status.replace('_', ' ')} (run {run_id})"
        f"\nfailed step: {failed_step or '-'}\n{error or ''}\n```{log_excerpt}```"
    )
    return {
        "event": "job_failed",
        "text": text,
        "job": job,
        "run_id": run_id,
        "status": status,
        "failed_step": failed_step,
        "error": error,
        "log_excerpt": log_excerpt,
    }


def stale_payload(job: str, run_id: str, stale: list[str]) -> dict[str, Any]:
    return {
        "event": "stale_sources",
        "text": f":warning: lakehouse job *{job}* (run {run_id}): stale sources: {', '.join(stale)}",
        "job": job,
        "run_id": run_id,
        "stale_sources": stale,
    }
