"""No credential in the repository: the detector is proven on planted secrets, then run on every file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.credential_scan import repository_files, scan_file, scan_text

REPO_ROOT = Path(__file__).resolve().parents[2]

# Planted secrets are assembled at run time so that this file itself stays clean.
_AWS_KEY_ID = "AKIA" + "Q3EGRT7XK2MZP4WN"
_AWS_SECRET = "wJalrXUtnF" + "EMI/K7MDENG/bPxRfiCYz9QmVb3kLp"
_PRIVATE_KEY = "-----BEGIN " + "RSA PRIVATE KEY-----"
_GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

PLANTED = {
    "aws_access_key_id": f"aws_access_key_id = {_AWS_KEY_ID}",
    "aws_secret_access_key": f"aws_secret_access_key: {_AWS_SECRET}",
    "private_key_block": _PRIVATE_KEY,
    "password_in_url": "LAKEHOUSE_ALERT_WEBHOOK_URL=https://alerts:" + "s3cr3tPa55@hooks.example.com/x",
    "github_token": f"token {_GITHUB_TOKEN}",
    "password_assignment": 'password = "' + 'hunter2hunter2"',
}
#: The secret inside each planted line, which a finding must not print (a private key's header is no secret).
SECRET = {
    "aws_access_key_id": _AWS_KEY_ID,
    "aws_secret_access_key": _AWS_SECRET,
    "private_key_block": None,
    "password_in_url": "s3cr3t" + "Pa55",
    "github_token": _GITHUB_TOKEN,
    "password_assignment": "hunter2" + "hunter2",
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_detector_finds_a_planted_secret_in_a_file(tmp_path: Path, kind: str) -> None:
    planted = tmp_path / "settings.env"
    planted.write_text(f"# config\nSOMETHING=1\n{PLANTED[kind]}\n")
    findings = scan_file(planted)
    assert [f.kind for f in findings] == [kind], findings
    assert findings[0].line == 3
    secret = SECRET[kind]
    assert secret is None or secret not in str(findings[0]) + repr(findings[0]), "findings must be redacted"


@pytest.mark.parametrize(
    "placeholder",
    [
        "url: https://${LAKEHOUSE_USER}:${LAKEHOUSE_PASSWORD}@host:10001/",
        "password: \"{{ env_var('LAKEHOUSE_PASSWORD') }}\"",
        "jdbc:derby:;databaseName=/tmp/metastore_db;create=true",
        "https://user:<password>@example.com/",
        "aws_secret_access_key = testing",
        "see https://spark.apache.org/docs/latest/sql-ref.html",
    ],
)
def test_detector_ignores_placeholders(placeholder: str) -> None:
    assert scan_text(placeholder) == []


def test_detector_skips_binary_files(tmp_path: Path) -> None:
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\0\1\2" + _AWS_KEY_ID.encode())
    assert scan_file(binary) == []


def test_no_credential_in_repository_files() -> None:
    files = repository_files(REPO_ROOT)
    assert len(files) > 10, "git ls-files returned almost nothing: not run inside the repository?"
    findings = []
    for name in files:
        path = REPO_ROOT / name
        if path.is_file() and not path.is_symlink():
            findings.extend(scan_file(path, name))
    assert not findings, "credential-shaped strings in the repository:\n" + "\n".join(map(str, findings))
