"""Errors raised by the Hudi writer library."""

from __future__ import annotations


class HoodieError(Exception):
    """A table cannot be opened, written or cleaned; the message names the table and the problem."""


class UnsupportedTableError(HoodieError):
    """The table exists but is not one this library may write (version, type, metadata table...)."""


class LockHeldError(HoodieError):
    """Another live process holds the table's single-writer lock."""
