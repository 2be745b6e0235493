"""Validated SQL identifiers and path literals: no SQL is built from unchecked text."""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,127}\Z")
_PROPERTY_VALUE = re.compile(r"^[A-Za-z0-9_.:/=+ -]{0,512}\Z")
_TYPE = re.compile(r"^(int|bigint|string|double|boolean|date|timestamp|decimal\(\d{1,2},\d{1,2}\))\Z")
_FORBIDDEN_IN_PATH = ("`", "\n", "\r", "\0", "'", "\\")


class IdentifierError(ValueError):
    """A name or path that cannot be used safely in a SQL statement."""


def quote_identifier(name: str) -> str:
    """``name`` in backticks after checking it is a plain lower-case identifier."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise IdentifierError(f"{name!r} is not a valid identifier (lower-case letters, digits, _)")
    return f"`{name}`"


def quote_path(path: str) -> str:
    """A file path as a backticked ``parquet.`<path>``` location, refusing quote characters."""
    if not path or any(ch in path for ch in _FORBIDDEN_IN_PATH):
        raise IdentifierError(f"path {path!r} contains a quote, backslash or control character")
    return f"`{path}`"


def quote_property_value(value: str) -> str:
    """A TBLPROPERTIES value in single quotes (a restricted alphabet, nothing to escape)."""
    if not isinstance(value, str) or not _PROPERTY_VALUE.match(value):
        raise IdentifierError(f"property value {value!r} has characters outside [A-Za-z0-9_.:/=+ -]")
    return f"'{value}'"


def check_type(name: str) -> str:
    """A column type of the placeholder views: one of the contract's Spark SQL types."""
    if not isinstance(name, str) or not _TYPE.match(name):
        raise IdentifierError(f"{name!r} is not a supported column type")
    return name
