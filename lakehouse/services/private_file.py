"""Files that hold a password (database passwords, connector and metastore configuration)."""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in a file created mode 600: never readable by others, not even
    between its creation and a later chmod. Written beside it and renamed into place."""
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temp.unlink(missing_ok=True)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    temp.replace(path)
