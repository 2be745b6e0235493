"""Shared CLI conventions: one-line errors with a hint, exit codes 0/1/2."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A failure to report as one clear line (plus an optional hint), no stack trace.

    ``exit_code`` is 1 for a failed operation and 2 for bad usage.
    """

    def __init__(self, message: str, hint: str | None = None, exit_code: int = EXIT_FAILED):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code


class UsageError(CliError):
    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message, hint, EXIT_USAGE)
