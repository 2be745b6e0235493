"""The real TICKIT dimension rows (category, venue, date, event), typed by the contracts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"

Row = dict[str, Any]


def _lines(name: str) -> list[list[str]]:
    path = DATA_DIR / name
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FileNotFoundError(f"TICKIT data file missing: {path} ({exc.strerror})") from exc
    return [line.split("|") for line in text.splitlines() if line]


def _int_or_none(text: str) -> int | None:
    return int(text) if text.strip() else None


def load_categories() -> list[Row]:
    return [
        {"catid": int(c[0]), "catgroup": c[1], "catname": c[2], "catdesc": c[3]} for c in _lines("category_pipe.txt")
    ]


def load_venues() -> list[Row]:
    return [
        {
            "venueid": int(v[0]),
            "venuename": v[1],
            "venuecity": v[2],
            "venuestate": v[3],
            "venueseats": _int_or_none(v[4]),
        }
        for v in _lines("venue_pipe.txt")
    ]


def load_dates() -> list[Row]:
    return [
        {
            "dateid": int(d[0]),
            "caldate": dt.date.fromisoformat(d[1]),
            "day": d[2],
            "week": int(d[3]),
            "month": d[4],
            "qtr": d[5],
            "year": int(d[6]),
            "holiday": d[7] in ("1", "t", "true", "TRUE"),
        }
        for d in _lines("date2008_pipe.txt")
    ]


def load_events() -> list[Row]:
    return [
        {
            "eventid": int(e[0]),
            "venueid": int(e[1]),
            "catid": int(e[2]),
            "dateid": int(e[3]),
            "eventname": e[4],
            "starttime": dt.datetime.fromisoformat(e[5]),
        }
        for e in _lines("allevents_pipe.txt")
    ]


def load_real_dimensions() -> dict[str, list[Row]]:
    """The four real tables by contract table name, in file order."""
    return {
        "category": load_categories(),
        "venue": load_venues(),
        "date": load_dates(),
        "event": load_events(),
    }
