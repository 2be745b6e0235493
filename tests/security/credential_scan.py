"""A small credential detector for the repository scan (patterns of common secret shapes).

It looks for the shapes that leak most often: cloud access keys, private-key blocks,
passwords or tokens inside URLs, known token prefixes and password or token
assignments with a literal value. Placeholders (``${VAR}``, ``{{ env_var(...) }}``, ``<password>``, ``***``)
are not findings: the project reads every secret from the environment.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("aws_access_key_id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    (
        "aws_secret_access_key",
        re.compile(r"(?i)aws_?secret_?(?:access_?)?key\s*[:=]\s*['\"]?(?P<secret>[A-Za-z0-9/+=]{40})\b"),
    ),
    ("private_key_block", re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    (
        "password_in_url",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@'\"<>]+:(?P<secret>[^\s@/'\"<>]+)@[^\s/'\"<>]+", re.I),
    ),
    ("github_token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{60,}")),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    (
        "password_assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|secret|api_?key|access_?token|auth_?token)\b['\"]?\s*[:=]\s*"
            r"['\"](?P<secret>[^'\"\s]{6,})['\"]"
        ),
    ),
)

#: Values that only stand in for a secret (templating, documentation placeholders).
_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|\{[^}]*\}|<[^>]*>|\*+|x+|\.\.\.|"
    r"(?:your|my|example|dummy|fake|placeholder|changeme|redacted|password|secret|token|testing|test)"
    r"[-_a-z0-9]*)$",
    re.I,
)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.excerpt}"


def _redact(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 12 else f"{text[:6]}...{text[-3:]}"


def scan_text(text: str, path: str = "<text>") -> list[Finding]:
    """Every credential-shaped string in ``text`` (placeholders excluded)."""
    findings = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in _PATTERNS:
            for match in pattern.finditer(line):
                secret = match.groupdict().get("secret")
                if secret is not None and _PLACEHOLDER.match(secret):
                    continue
                findings.append(Finding(path, number, kind, _redact(match.group(0))))
    return findings


def scan_file(path: Path, display: str | None = None) -> list[Finding]:
    """Findings of one file; binary files (a NUL byte in the first 8 KiB) are skipped."""
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return []
    return scan_text(data.decode("utf-8", errors="replace"), display or str(path))


def repository_files(root: Path) -> list[str]:
    """Tracked files plus untracked files that are not ignored (what the next commit could hold)."""
    result = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    return sorted({name for name in result.stdout.decode().split("\0") if name})
