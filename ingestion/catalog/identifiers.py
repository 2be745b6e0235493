"""Validated SQL identifiers and path literals: no SQL is built from unchecked text."""

from __future__ import annotations

import re

from ingestion.errors import IngestionError

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,127}\Z")
_FORBIDDEN_IN_PATH = ("`", "\n", "\r", "\0", "'", "\\")


class IdentifierError(IngestionError, ValueError):
    """A name or path that cannot be used safely in a SQL statement."""


def quote_identifier(name: str) -> str:
    """``name`` in backticks after checking it is a plain lower-case identifier."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise IdentifierError(f"{name!r} is not a valid identifier (lower-case letters, digits, _)")
    return f"`{name}`"


def quote_location(path: str) -> str:
    """A table ``LOCATION`` (a path or URI) as a single-quoted literal, refusing quote characters."""
    if not path or any(ch in path for ch in _FORBIDDEN_IN_PATH):
        raise IdentifierError(f"path {path!r} contains a quote, backslash or control character")
    return f"'{path}'"
