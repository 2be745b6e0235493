"""Java ``.properties`` text, as Hudi reads and writes ``hoodie.properties`` and partition metadata."""

from __future__ import annotations

import datetime as dt

_ESCAPES = {"\\": "\\\\", ":": "\\:", "=": "\\=", "#": "\\#", "!": "\\!", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f"}


def _escape(text: str, is_key: bool) -> str:
    out = []
    for index, char in enumerate(text):
        if char == " " and (is_key or index == 0):
            out.append("\\ ")
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) > 0x7E or ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def _unescape(text: str) -> str:
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            nxt = text[index + 1]
            if nxt == "u" and index + 5 < len(text) + 0:
                out.append(chr(int(text[index + 2 : index + 6], 16)))
                index += 6
                continue
            out.append(_UNESCAPES.get(nxt, nxt))
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def parse(text: str) -> dict[str, str]:
    """Parse Java properties text (comments, ``=``/``:`` separators, escapes, continuation lines)."""
    props: dict[str, str] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].lstrip()
        index += 1
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and not line.endswith("\\\\") and index < len(lines):
            line = line[:-1] + lines[index].lstrip()
            index += 1
        key_end, pos = len(line), 0
        while pos < len(line):
            char = line[pos]
            if char == "\\":
                pos += 2
                continue
            if char in "=: \t":
                key_end = pos
                break
            pos += 1
        key = line[:key_end]
        rest = line[key_end:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        props[_unescape(key)] = _unescape(rest)
    return props


def render(props: dict[str, str], comment: str | None = None, now: dt.datetime | None = None) -> str:
    """Render properties as Java's ``Properties.store`` does (comment line, date line, key=value)."""
    now = now or dt.datetime.now(dt.UTC)
    lines = []
    if comment:
        lines.append(f"#{comment}")
    lines.append("#" + now.strftime("%a %b %d %H:%M:%S UTC %Y"))
    lines.extend(f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items())
    return "\n".join(lines) + "\n"
