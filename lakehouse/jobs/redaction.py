"""Secrets out of text that leaves the machine (alert webhooks carry a failed step's log excerpt).

Two passes: the values of this process's environment variables whose names say they hold a
secret (``*PASSWORD*``, ``*SECRET*``, ``*TOKEN*``, ``*_KEY``/``*KEY_ID``, ``*CREDENTIAL*``),
wherever they appear; then the shapes secrets take in logs whatever their value: ``key=value``
and ``"key": "value"`` pairs under such names, a URL's ``user:password@``, ``Bearer`` tokens and
AWS access key ids.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

MASK = "***"
_SECRET_NAME = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|_KEY$|KEY_ID$|^PGPASSWORD$", re.IGNORECASE)
_PATTERNS = (
    # password=..., secret: ..., "aws_secret_access_key": "...", token=... (value up to a separator)
    re.compile(r"""(?ix)
        (?P<name>["']?[\w.-]*(?:password|passwd|secret|token|credential|access[_-]?key|api[_-]?key)[\w.-]*["']?)
        (?P<sep>\s*[:=]\s*)
        (?P<value>"[^"]*"|'[^']*'|[^\s,;&"'}\]]+)"""),
    re.compile(r"(?P<name>[a-z][a-z0-9+.-]*://[^/\s:@]+:)(?P<value>[^@\s/]+)(?=@)", re.IGNORECASE),
    re.compile(r"(?P<name>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})"),
    re.compile(r"(?P<value>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"),
)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the environment's secret-named variables (longest first; short ones ignored)."""
    environ = os.environ if environ is None else environ
    values = {value for name, value in environ.items() if _SECRET_NAME.search(name) and len(value) >= 6}
    return sorted(values, key=len, reverse=True)


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with known secret values and secret-shaped substrings replaced by ``***``."""
    for value in secret_values(environ):
        text = text.replace(value, MASK)

    def mask(match: re.Match[str]) -> str:
        groups = match.groupdict()
        value = groups["value"]
        quote = value[0] if value[:1] in ("'", '"') else ""
        return f"{groups.get('name') or ''}{groups.get('sep') or ''}{quote}{MASK}{quote}"

    for pattern in _PATTERNS:
        text = pattern.sub(mask, text)
    return text
