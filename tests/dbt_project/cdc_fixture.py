"""A small, deterministic TICKIT change log for exercising the dbt project, and its oracle.

``initial_events()`` and ``change_events()`` return bronze-shaped change events (source
columns under their source names + the ``_cdc_*`` metadata) for the seven tables. They
cover the cases the silver layer must get right: updates, deletes, a delete followed by a
re-insert, late (out-of-order) events delivered in a later commit, a late event for a
deleted key, a truncate followed by new rows, and an update produced after the snapshot
row of its key with a smaller source position (a PostgreSQL transaction open while
Debezium's snapshot ran).

The oracle is ``TickitFixture.rows``: the source database's own rows after every change,
kept as the changes are made, never derived from the events.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal

from ingestion.cdc.contracts import load_contracts

SYSTEM_DB = {"ecomm": "ecomm", "ems": "tickit", "crm": "tickit"}
STATES = ["CA", "NY", "TX", "WA", "IL", "FL", "MA", "NV"]
BASE_TIME = dt.datetime(2008, 1, 1, 0, 0, 0)


@dataclass
class ChangeLog:
    """Change events per table. Positions and Kafka offsets come from one counter, so they
    sort in production order unless a caller gives an older one (a late event) or a
    position that disagrees with its offset."""

    events: dict[str, list[dict]] = field(default_factory=lambda: {t: [] for t in load_contracts()})
    next_position: int = 1

    def fresh(self) -> int:
        """The next position/offset of the counter."""
        value = self.next_position
        self.next_position += 1
        return value

    def emit(self, table: str, op: str, row: dict, position: int | None = None, offset: int | None = None) -> dict:
        """One change event; `position` defaults to the next one, `offset` to the position."""
        contract = load_contracts()[table]
        if position is None:
            position = self.fresh()
        if offset is None:
            offset = position
        source_ts = BASE_TIME + dt.timedelta(seconds=position)
        event = {c: row.get(c) for c in contract.column_names}
        event.update(
            _cdc_op=op,
            _cdc_is_deleted=op == "d",
            _cdc_source_ts=source_ts,
            _cdc_position=f"{position:024d}",
            _cdc_tx_id=str(position),
            _cdc_source_db=SYSTEM_DB[contract.system],
            _cdc_source_table=table,
            _cdc_topic=contract.topics[0],
            _cdc_kafka_partition=0,
            _cdc_kafka_offset=offset,
            _cdc_landing_file=f"topics/{contract.topics[0]}/partition=0/{contract.topics[0]}+0+0000000000.json",
            _cdc_ingested_at=None,  # set by the loader at commit time
            _cdc_source_date=source_ts.date(),
        )
        self.events[table].append(event)
        return event

    def delete(self, table: str, row: dict) -> dict:
        """A Debezium rewrite-mode delete: key kept, other columns null."""
        pk = load_contracts()[table].primary_key
        return self.emit(table, "d", {k: row[k] for k in pk})

    def truncate(self, table: str) -> dict:
        return self.emit(table, "t", {})

    def take(self) -> dict[str, list[dict]]:
        """The events emitted since the last take (one bronze commit's worth)."""
        taken, self.events = self.events, {t: [] for t in load_contracts()}
        return taken


def _money(value: float) -> Decimal:
    return Decimal(str(round(value, 2))).quantize(Decimal("0.01"))


def _user(i: int, rng: random.Random) -> dict:
    row = {
        "userid": i,
        "username": f"USR{i:05d}",
        "firstname": rng.choice(["Ada", "Bo", "Cy", "Di", "Ed"]),
        "lastname": rng.choice(["Lee", "Kim", "Ng", "Ruiz"]),
        "city": rng.choice(["Springfield", "Riverton", "Lakeside"]),
        "state": rng.choice(STATES),
        "email": f"user{i}@example.com",
        "phone": f"(555) 555-{i:04d}",
    }
    for like in ["sports", "theatre", "concerts", "jazz", "classical", "opera", "rock", "vegas", "broadway",
                 "musicals"]:
        row[f"like{like}"] = rng.choice([True, False, None])
    return row


class TickitFixture:
    """Builds the initial load and one round of changes; every number is deterministic."""

    def __init__(self, seed: int = 7, users: int = 40, events: int = 12, listings: int = 40, sales: int = 60):
        self.rng = random.Random(seed)
        self.log = ChangeLog()
        self.n_users, self.n_events, self.n_listings, self.n_sales = users, events, listings, sales
        self.rows: dict[str, dict[int, dict]] = {t: {} for t in load_contracts()}
        self.positions: dict[str, dict[int, int]] = {t: {} for t in load_contracts()}

    def _put(self, table: str, op: str, row: dict) -> None:
        pk = load_contracts()[table].primary_key[0]
        self.rows[table][row[pk]] = row
        self.positions[table][row[pk]] = int(self.log.emit(table, op, row)["_cdc_position"])

    def initial_events(self) -> dict[str, list[dict]]:
        rng = self.rng
        for i in range(1, 4):
            self._put("category", "r", {"catid": i, "catgroup": ["Sports", "Shows", "Concerts"][i - 1],
                                         "catname": ["MLB", "Musicals", "Pop"][i - 1],
                                         "catdesc": f"Category {i}"})
        for i in range(1, 6):
            self._put("venue", "r", {"venueid": i, "venuename": f"Venue {i}", "venuecity": "Springfield",
                                      "venuestate": STATES[i % len(STATES)], "venueseats": 1000 * i})
        for i in range(1, 31):
            day = dt.date(2008, 1, 1) + dt.timedelta(days=i - 1)
            self._put("date", "r", {"dateid": 1827 + i, "caldate": day, "day": day.strftime("%a").upper()[:2],
                                     "week": int(day.strftime("%V")), "month": day.strftime("%b").upper(),
                                     "qtr": str((day.month - 1) // 3 + 1), "year": day.year,
                                     "holiday": day == dt.date(2008, 1, 1)})
        for i in range(1, self.n_users + 1):
            self._put("user", "r", _user(i, rng))
        for i in range(1, self.n_events + 1):
            self._put("event", "c", {"eventid": i, "venueid": rng.randint(1, 5), "catid": rng.randint(1, 3),
                                      "dateid": 1827 + rng.randint(1, 30), "eventname": f"Event {i}",
                                      "starttime": BASE_TIME + dt.timedelta(days=rng.randint(1, 29), hours=19)})
        for i in range(1, self.n_listings + 1):
            self._new_listing(i)
        for i in range(1, self.n_sales + 1):
            self._new_sale(i)
        return self.log.take()

    def _new_listing(self, i: int) -> None:
        rng = self.rng
        tickets = rng.randint(1, 20)
        price = _money(rng.uniform(10, 400))
        self._put("listing", "c", {"listid": i, "sellerid": rng.randint(1, self.n_users),
                                    "eventid": rng.randint(1, self.n_events), "dateid": 1827 + rng.randint(1, 30),
                                    "numtickets": tickets, "priceperticket": price,
                                    "totalprice": (price * tickets).quantize(Decimal("0.01")),
                                    "listtime": BASE_TIME + dt.timedelta(hours=i)})

    def _new_sale(self, i: int) -> None:
        rng = self.rng
        listing = self.rows["listing"][rng.choice(sorted(self.rows["listing"]))]
        qty = rng.randint(1, 8)
        paid = (listing["priceperticket"] * qty).quantize(Decimal("0.01"))
        self._put("sale", "c", {"salesid": i, "listid": listing["listid"], "sellerid": listing["sellerid"],
                                 "buyerid": rng.randint(1, self.n_users), "eventid": listing["eventid"],
                                 "dateid": listing["dateid"], "qtysold": qty, "pricepaid": paid,
                                 "commission": _money(float(paid) * 0.15),
                                 "saletime": listing["listtime"] + dt.timedelta(hours=rng.randint(1, 48))})

    def change_events(self) -> dict[str, list[dict]]:
        """Updates, deletes, a delete + re-insert, late events and a venue truncate."""
        rng = self.rng
        log = self.log
        # updates of users (state moves) and listings (price changes)
        for uid in (1, 2, 3):
            row = dict(self.rows["user"][uid], state="NV", city="Las Vegas")
            self._put("user", "u", row)
        # a late, older user event (position before the update above): must not win
        stale = dict(self.rows["user"][1], state="ZZ")
        log.emit("user", "u", stale, position=1)
        # delete a user, then delete + re-insert another
        log.delete("user", self.rows["user"].pop(4))
        log.delete("user", self.rows["user"][5])
        self._put("user", "c", dict(self.rows["user"][5], firstname="Reborn"))
        # a late event for a deleted key must not resurrect it
        log.emit("user", "u", dict(_user(4, rng), firstname="Ghost"), position=2)
        # new sales and listings, a deleted sale
        for i in range(self.n_listings + 1, self.n_listings + 6):
            self._new_listing(i)
        for i in range(self.n_sales + 1, self.n_sales + 11):
            self._new_sale(i)
        log.delete("sale", self.rows["sale"].pop(7))
        listing = dict(self.rows["listing"][3])
        listing["numtickets"] += 1
        listing["totalprice"] = (listing["priceperticket"] * listing["numtickets"]).quantize(Decimal("0.01"))
        self._put("listing", "u", listing)
        # truncate venues, then re-insert two of them with new data
        log.truncate("venue")
        self.rows["venue"].clear()
        for i in (1, 2):
            self._put("venue", "c", {"venueid": i, "venuename": f"Venue {i} (rebuilt)", "venuecity": "Riverton",
                                      "venuestate": "TX", "venueseats": 500})
        # a late venue event from before the truncate: stays truncated
        log.emit("venue", "u", {"venueid": 3, "venuename": "Venue 3 late", "venuecity": "X", "venuestate": "CA",
                                "venueseats": 1}, position=3)
        # a category renamed
        self._put("category", "u", dict(self.rows["category"][2], catname="Plays"))
        # a PostgreSQL transaction open while the snapshot ran: its update of category 3 is
        # produced now (a new offset) with a source position below the snapshot row's
        renamed = dict(self.rows["category"][3], catname="Rock")
        self.rows["category"][3] = renamed
        log.emit("category", "u", renamed, position=self.positions["category"][3] - 1, offset=log.fresh())
        return log.take()
