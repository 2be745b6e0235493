"""The root of the ingestion's own exceptions.

Every error the ingestion raises on purpose (a bad contract, a landing path it cannot read,
a lake another writer holds, an unreachable Thrift server, ...) is an ``IngestionError``,
so a caller can catch the package's failures in one clause and tell them from bugs. Each
keeps the built-in base it had (``ValueError`` for bad input, ``RuntimeError`` for a
state of the world), so existing ``except ValueError`` clauses still hold.
"""

from __future__ import annotations


class IngestionError(Exception):
    """An error the ingestion raises on purpose, with a message that names the input and the problem."""
