"""Synthetic TICKIT rows and changes that keep TICKIT's rules.

Rules kept: every foreign key of a new or changed row points at a live row; a listing's
time is before its event starts and on a day of the date table (TICKIT's calendar lacks
2008-02-29); ``totalprice = numtickets * priceperticket``; a sale takes 1-8 tickets
from a listing that still has them, after the listing time and before the event, from
the listing's seller to another user; ``pricepaid = qtysold * priceperticket`` and
``commission`` is 15% of it (rounded half-up to cents).
"""

from __future__ import annotations

import bisect
import datetime as dt
import random
import string
from decimal import ROUND_HALF_UP, Decimal

from simulator.database import SourceDatabase

Row = dict

FIRST_NAMES = [
    "Rafael",
    "Lars",
    "Kato",
    "Tamekah",
    "Eleanor",
    "Aladdin",
    "Cleo",
    "Quon",
    "Hiram",
    "Zia",
    "Blossom",
    "Vera",
    "Ingrid",
    "Lucian",
    "Mona",
    "Ezra",
    "Sybil",
    "Otto",
    "Halla",
    "Nero",
    "Priya",
    "Jonah",
    "Amelia",
    "Kieran",
    "Rina",
    "Tobias",
    "Wyatt",
    "Xandra",
    "Yusuf",
    "Zelda",
]
LAST_NAMES = [
    "Taylor",
    "Vang",
    "Hernandez",
    "Richardson",
    "Roy",
    "Woods",
    "Bird",
    "Carr",
    "Maddox",
    "Graham",
    "Ball",
    "Dyer",
    "Ortiz",
    "Keller",
    "Nash",
    "Pratt",
    "Quinn",
    "Reese",
    "Sloan",
    "Tate",
    "Underwood",
    "Vance",
    "Walsh",
    "Xiong",
    "Young",
    "Zamora",
    "Abbott",
    "Banks",
    "Coleman",
    "Duffy",
]
DOMAINS = ("example.com", "example.org", "mail.example.net", "tickit.example")
CATEGORY_NAMES = (
    ("Shows", "Comedy", "Stand-up comedy"),
    ("Concerts", "Folk", "Folk and acoustic music"),
    ("Sports", "MLS", "Major League Soccer"),
    ("Shows", "Magic", "Magic and illusion shows"),
)
LIKE_COLUMNS = [
    "likesports",
    "liketheatre",
    "likeconcerts",
    "likejazz",
    "likeclassical",
    "likeopera",
    "likerock",
    "likevegas",
    "likebroadway",
    "likemusicals",
]
COMMISSION_RATE = Decimal("0.15")
CENT = Decimal("0.01")


_USERNAME_ALPHABET = string.ascii_uppercase + string.digits
_LIKE_VALUES = (True, False, None, None)  # TICKIT's preference flags are often unknown


def _username(bits: int) -> str:
    """Eight upper-case letters/digits (TICKIT's CHAR(8) usernames) from random bits."""
    chars = []
    for _ in range(8):
        bits, index = divmod(bits, 36)
        chars.append(_USERNAME_ALPHABET[index])
    return "".join(chars)


def money(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


class Calendar:
    """TICKIT's date table: day lookups that skip days the table does not have."""

    def __init__(self, dates: list[Row]):
        ordered = sorted(dates, key=lambda d: d["caldate"])
        self.days = [d["caldate"] for d in ordered]
        self.ids = [d["dateid"] for d in ordered]
        self.by_day = dict(zip(self.days, self.ids, strict=True))

    def dateid(self, day: dt.date) -> int | None:
        return self.by_day.get(day)

    def live_dateid(self, db: SourceDatabase, day: dt.date) -> int | None:
        """The dateid of ``day`` when that date row is live (deleted dates are not referenced)."""
        dateid = self.by_day.get(day)
        return dateid if dateid is not None and db.live("date", dateid) else None

    def random_time_before(self, rng: random.Random, limit: dt.datetime) -> dt.datetime | None:
        """A time on a calendar day, strictly before ``limit`` (None when the calendar has no such day)."""
        last = bisect.bisect_right(self.days, limit.date())
        if last == 0:
            return None
        day = self.days[rng.randrange(last)]
        start = dt.datetime.combine(day, dt.time())
        span = min(86_400, int((limit - start).total_seconds()))
        if span <= 0:
            return None
        return start + dt.timedelta(seconds=rng.randrange(span))


class Generator:
    """Makes and changes rows against the live ``SourceDatabase``."""

    def __init__(self, db: SourceDatabase, calendar: Calendar, places: list[tuple[str, str]]):
        self.db = db
        self.calendar = calendar
        self.places = places

    # --- users -------------------------------------------------------------------------------
    def user(self, rng: random.Random, userid: int) -> Row:
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        city, state = rng.choice(self.places)
        row = {
            "userid": userid,
            "username": _username(rng.getrandbits(41)),
            "firstname": first,
            "lastname": last,
            "city": city,
            "state": state,
            "email": f"{first}.{last}{userid}@{rng.choice(DOMAINS)}".lower(),
            "phone": self.phone(rng),
        }
        bits = rng.getrandbits(2 * len(LIKE_COLUMNS))
        for column in LIKE_COLUMNS:
            row[column] = _LIKE_VALUES[bits & 3]
            bits >>= 2
        return row

    @staticmethod
    def phone(rng: random.Random) -> str:
        return f"({rng.randint(200, 989)}) {rng.randint(200, 999)}-{rng.randint(0, 9999):04d}"

    def change_user(self, rng: random.Random, row: Row) -> Row:
        new = dict(row)
        choice = rng.randrange(4)
        if choice == 0:
            new["email"] = f"{row['firstname']}.{row['lastname']}.{rng.randint(1, 999)}@{rng.choice(DOMAINS)}".lower()
        elif choice == 1:
            new["phone"] = self.phone(rng)
        elif choice == 2:
            new["city"], new["state"] = rng.choice(self.places)
        else:
            column = rng.choice(LIKE_COLUMNS)
            new[column] = not row[column] if row[column] is not None else rng.choice((True, False))
        return new

    # --- listings ----------------------------------------------------------------------------
    def listing(self, rng: random.Random, listid: int) -> Row | None:
        event = self.db.get("event", self.db.pools["event"].choice(rng))
        listtime = self.calendar.random_time_before(rng, event["starttime"])
        if listtime is None or self.calendar.live_dateid(self.db, listtime.date()) is None:
            return None
        numtickets = rng.randint(1, 30)
        price = Decimal(min(2500, max(20, int(rng.lognormvariate(4.9, 0.8))))).quantize(CENT)
        return {
            "listid": listid,
            "sellerid": self.db.pools["user"].choice(rng),
            "eventid": event["eventid"],
            "dateid": self.calendar.dateid(listtime.date()),
            "numtickets": numtickets,
            "priceperticket": price,
            "totalprice": money(price * numtickets),
            "listtime": listtime,
        }

    def change_listing(self, rng: random.Random, row: Row) -> Row:
        new = dict(row)
        if rng.random() < 0.5:
            factor = Decimal(rng.choice(("0.80", "0.90", "0.95", "1.05", "1.10")))
            new["priceperticket"] = max(Decimal("1.00"), money(row["priceperticket"] * factor))
        else:
            new["numtickets"] = min(
                30, max(row["numtickets"] + rng.choice((-2, -1, 1, 2)), self.db.sold[row["listid"]], 1)
            )
        new["totalprice"] = money(new["priceperticket"] * new["numtickets"])
        return new

    # --- sales -------------------------------------------------------------------------------
    def sale(self, rng: random.Random, salesid: int) -> Row | None:
        for _ in range(20):
            listing = self.db.get("listing", self.db.pools["listing"].choice(rng))
            available = listing["numtickets"] - self.db.sold[listing["listid"]]
            if available < 1:
                continue
            start = self.db.get("event", listing["eventid"])["starttime"]
            saletime = self._between(rng, listing["listtime"], start)
            buyer = self._other_user(rng, listing["sellerid"])
            if saletime is None or buyer is None:
                continue
            qtysold = rng.randint(1, min(8, available))
            pricepaid = money(listing["priceperticket"] * qtysold)
            return {
                "salesid": salesid,
                "listid": listing["listid"],
                "sellerid": listing["sellerid"],
                "buyerid": buyer,
                "eventid": listing["eventid"],
                "dateid": self.calendar.dateid(saletime.date()),
                "qtysold": qtysold,
                "pricepaid": pricepaid,
                "commission": money(pricepaid * COMMISSION_RATE),
                "saletime": saletime,
            }
        return None

    def change_sale(self, rng: random.Random, row: Row) -> Row | None:
        buyer = self._other_user(rng, row["sellerid"], avoid=row["buyerid"])
        return None if buyer is None else {**row, "buyerid": buyer}

    def _other_user(self, rng: random.Random, seller: int, avoid: int | None = None) -> int | None:
        for _ in range(10):
            user = self.db.pools["user"].choice(rng)
            if user not in (seller, avoid):
                return user
        return None

    def _between(self, rng: random.Random, after: dt.datetime, before: dt.datetime) -> dt.datetime | None:
        span = int((before - after).total_seconds())
        for _ in range(5):
            if span < 2:
                return None
            moment = after + dt.timedelta(seconds=rng.randint(1, span - 1))
            if self.calendar.live_dateid(self.db, moment.date()) is not None:
                return moment
        return None

    # --- dimensions --------------------------------------------------------------------------
    def event(self, rng: random.Random, eventid: int) -> Row | None:
        day_index = rng.randrange(len(self.calendar.days))
        day = self.calendar.days[day_index]
        if not self.db.live("date", self.calendar.ids[day_index]):
            return None
        return {
            "eventid": eventid,
            "venueid": self.db.pools["venue"].choice(rng),
            "catid": self.db.pools["category"].choice(rng),
            "dateid": self.calendar.ids[day_index],
            "eventname": f"{rng.choice(LAST_NAMES)} {rng.choice(('Live', 'Tour', 'Revue', 'Night', 'Classic'))}",
            "starttime": dt.datetime.combine(day, dt.time(rng.choice((14, 19, 20)), rng.choice((0, 30)))),
        }

    def change_event(self, rng: random.Random, row: Row) -> Row:
        if rng.random() < 0.5:
            return {**row, "venueid": self.db.pools["venue"].choice(rng)}
        return {**row, "eventname": row["eventname"][:180] + rng.choice((" (Encore)", " - Extra Show", " II"))}

    def venue(self, rng: random.Random, venueid: int) -> Row:
        city, state = rng.choice(self.places)
        return {
            "venueid": venueid,
            "venuename": f"{rng.choice(LAST_NAMES)} {rng.choice(('Arena', 'Hall', 'Theatre', 'Field', 'Pavilion'))}",
            "venuecity": city,
            "venuestate": state,
            "venueseats": rng.choice((None, 0, rng.randint(500, 70000))),
        }

    def change_venue(self, rng: random.Random, row: Row) -> Row:
        return {**row, "venueseats": rng.randint(500, 70000)}

    def category(self, rng: random.Random, catid: int) -> Row:
        group, name, description = rng.choice(CATEGORY_NAMES)
        return {"catid": catid, "catgroup": group, "catname": name, "catdesc": description}

    def change_category(self, rng: random.Random, row: Row) -> Row:
        return {**row, "catdesc": rng.choice(("Updated: ", "New: ", "")) + row["catdesc"].split(": ")[-1][:40]}

    def date(self, rng: random.Random, dateid: int) -> Row | None:
        return None  # the calendar is fixed: dates are only updated (holiday flags)

    def change_date(self, rng: random.Random, row: Row) -> Row:
        return {**row, "holiday": not row["holiday"]}

    # --- dispatch ----------------------------------------------------------------------------
    def new_row(self, table: str, rng: random.Random, key: int) -> Row | None:
        return getattr(self, table)(rng, key)

    def changed_row(self, table: str, rng: random.Random, row: Row) -> Row | None:
        return getattr(self, f"change_{table}")(rng, row)
