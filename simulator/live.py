"""A TICKIT workload on real databases: the source side of the real-sources harness.

Where the simulator writes the events a connector would send, this module changes real
tables and lets real Debezium connectors send the events: the ``ems`` schema in
PostgreSQL (category, venue, event) and the ``ecomm`` database in MariaDB (date, listing,
sale), created from the table contracts. The ``crm`` system (SQL Server) has no server
here and stays simulated; the workload's sellers and buyers are user ids ``1..users``.

* ``create_tables`` makes each contract's table (Spark types mapped to the dialect:
  ``timestamp`` -> ``timestamp`` / ``DATETIME(6)``, ``boolean`` -> ``boolean`` /
  ``TINYINT(1)``, decimals kept);
* ``Workload.load_snapshot`` fills them before the connectors start (real TICKIT
  dimensions, generated listings and sales);
* ``Workload.step`` runs one random operation: an insert, an update, several updates of one
  row in one transaction, a delete, a delete then re-insert of the same key in one
  transaction, a multi-row update (one statement, several rows);
* ``truncate_sales`` and ``add_column`` are the rarer operations a test plants at chosen
  points (a TRUNCATE, a column added mid-stream).

The final state, ``source_rows``, is what ``silver.<entity>`` must equal: it is read
from the database itself, never from the workload's own bookkeeping.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from ingestion.cdc.contracts import TableContract
from simulator import tickit

Row = dict[str, Any]
#: The contract systems that have a real database here, and the dialect of each.
DIALECTS = {"ems": "postgres", "ecomm": "mariadb"}
CENT = Decimal("0.01")


class Connection(Protocol):
    """The part of a DB-API connection the workload uses (psycopg 3 and PyMySQL both fit)."""

    def cursor(self) -> Any: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...


def quote(name: str, dialect: str) -> str:
    return f"`{name}`" if dialect == "mariadb" else f'"{name}"'


def table_name(contract: TableContract, dialect: str) -> str:
    table = quote(contract.name, dialect)
    return f"{quote(contract.schema, dialect)}.{table}" if contract.schema and dialect == "postgres" else table


def column_type(spark_type: str, dialect: str) -> str:
    """The source column type of a contract's Spark SQL type."""
    if spark_type.startswith("decimal"):
        return spark_type.replace("decimal", "numeric" if dialect == "postgres" else "DECIMAL")
    postgres = {"int": "integer", "bigint": "bigint", "string": "varchar(256)", "double": "double precision",
                "boolean": "boolean", "date": "date", "timestamp": "timestamp"}
    mariadb = {"int": "INT", "bigint": "BIGINT", "string": "VARCHAR(256)", "double": "DOUBLE",
               "boolean": "TINYINT(1)", "date": "DATE", "timestamp": "DATETIME(6)"}
    return (postgres if dialect == "postgres" else mariadb)[spark_type]


def create_table_sql(contract: TableContract, dialect: str) -> list[str]:
    """The statements that create the contract's table (and, in PostgreSQL, its schema)."""
    columns = [f"{quote(c.name, dialect)} {column_type(c.type, dialect)}"
               + (" NOT NULL" if c.name in contract.primary_key else "") for c in contract.columns]
    key = ", ".join(quote(c, dialect) for c in contract.primary_key)
    statements = []
    if dialect == "postgres" and contract.schema:
        statements.append(f"CREATE SCHEMA IF NOT EXISTS {quote(contract.schema, dialect)}")
    statements.append(f"CREATE TABLE {table_name(contract, dialect)} ({', '.join(columns)}, PRIMARY KEY ({key}))")
    return statements


def create_tables(connections: dict[str, Connection], contracts: dict[str, TableContract]) -> None:
    """Create every real-source table of ``contracts`` in the connection of its system."""
    for contract in contracts.values():
        dialect = DIALECTS.get(contract.system)
        if dialect is None:
            continue
        conn = connections[contract.system]
        with _cursor(conn) as cur:
            for statement in create_table_sql(contract, dialect):
                cur.execute(statement)
        conn.commit()


@contextmanager
def _cursor(conn: Connection) -> Iterator[Any]:
    cur = conn.cursor()
    try:
        yield cur
    finally:
        cur.close()


def insert_row(cur: Any, contract: TableContract, dialect: str, row: Row) -> None:
    """``INSERT`` one row (its keys are column names) with the cursor ``cur``."""
    names = ", ".join(quote(c, dialect) for c in row)
    marks = ", ".join(["%s"] * len(row))
    cur.execute(f"INSERT INTO {table_name(contract, dialect)} ({names}) VALUES ({marks})", list(row.values()))


def source_rows(conn: Connection, contract: TableContract, dialect: str) -> list[Row]:
    """Every row of the source table (the contract's columns), by primary key: the oracle."""
    names = ", ".join(quote(c, dialect) for c in contract.column_names)
    order = ", ".join(quote(c, dialect) for c in contract.primary_key)
    with _cursor(conn) as cur:
        cur.execute(f"SELECT {names} FROM {table_name(contract, dialect)} ORDER BY {order}")  # noqa: S608
        rows = [dict(zip(contract.column_names, values, strict=True)) for values in cur.fetchall()]
    conn.commit()  # end the read transaction (a PostgreSQL session would hold its snapshot)
    for row in rows:
        for column in contract.columns:
            if column.type == "boolean" and row[column.name] is not None:
                row[column.name] = bool(row[column.name])  # MariaDB's TINYINT(1)
    return rows


@dataclass
class Workload:
    """Random TICKIT changes on the real tables; every operation commits (or rolls back) itself."""

    connections: dict[str, Connection]
    contracts: dict[str, TableContract]
    rng: random.Random
    users: int
    events_in_snapshot: int = 300
    counts: dict[str, int] = field(default_factory=dict)
    _next_ids: dict[str, int] = field(default_factory=dict)

    # --- plumbing -----------------------------------------------------------------------------
    def _dialect(self, table: str) -> str:
        return DIALECTS[self.contracts[table].system]

    def _conn(self, table: str) -> Connection:
        return self.connections[self.contracts[table].system]

    def _sql(self, table: str, text: str) -> str:
        """``text`` with ``{t}`` as the quoted table and ``%s`` placeholders (both drivers' style)."""
        return text.replace("{t}", table_name(self.contracts[table], self._dialect(table)))

    def _insert(self, cur: Any, table: str, row: Row) -> None:
        insert_row(cur, self.contracts[table], self._dialect(table), row)

    def _keys(self, table: str) -> list[int]:
        key = quote(self.contracts[table].primary_key[0], self._dialect(table))
        with _cursor(self._conn(table)) as cur:
            cur.execute(self._sql(table, f"SELECT {key} FROM {{t}} ORDER BY {key}"))  # noqa: S608
            keys = [int(r[0]) for r in cur.fetchall()]
        self._conn(table).commit()
        return keys

    def _referenced(self, table: str, key: int) -> bool:
        """A row other rows point to is never deleted (the sources' own foreign keys, cross-system too)."""
        refs = {"listing": [("sale", "listid")], "event": [("listing", "eventid"), ("sale", "eventid")],
                "venue": [("event", "venueid")], "category": [("event", "catid")],
                "date": [("event", "dateid"), ("listing", "dateid"), ("sale", "dateid")]}
        for child, column in refs.get(table, []):
            with _cursor(self._conn(child)) as cur:
                cur.execute(self._sql(child, f"SELECT 1 FROM {{t}} WHERE {quote(column, self._dialect(child))} = %s"),  # noqa: S608
                            [key])
                found = cur.fetchone() is not None
            self._conn(child).commit()
            if found:
                return True
        return False

    def _new_id(self, table: str) -> int:
        if table not in self._next_ids:
            keys = self._keys(table)
            self._next_ids[table] = (max(keys) if keys else 0) + 1
        self._next_ids[table] += 1
        return self._next_ids[table] - 1

    def _count(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    # --- rows ---------------------------------------------------------------------------------
    def listing(self, listid: int, events: Sequence[Row], dateids: Sequence[int]) -> Row:
        numtickets = self.rng.randint(1, 30)
        price = Decimal(self.rng.randint(20, 900)).quantize(CENT)
        return {"listid": listid, "sellerid": self.rng.randint(1, self.users),
                "eventid": self.rng.choice(events)["eventid"], "dateid": self.rng.choice(dateids),
                "numtickets": numtickets, "priceperticket": price, "totalprice": price * numtickets,
                "listtime": dt.datetime(2008, 1, 1) + dt.timedelta(microseconds=self.rng.getrandbits(44))}

    def sale(self, salesid: int, listing: Row) -> Row:
        qty = self.rng.randint(1, 8)
        paid = (listing["priceperticket"] * qty).quantize(CENT)
        return {"salesid": salesid, "listid": listing["listid"], "sellerid": listing["sellerid"],
                "buyerid": self.rng.randint(1, self.users), "eventid": listing["eventid"],
                "dateid": listing["dateid"], "qtysold": qty, "pricepaid": paid,
                "commission": (paid * Decimal("0.15")).quantize(CENT),
                "saletime": listing["listtime"] + dt.timedelta(seconds=self.rng.randint(60, 10**6))}

    def load_snapshot(self, listings: int = 400, sales: int = 400) -> None:
        """Fill the tables before the connectors start (they snapshot this state)."""
        real = tickit.load_real_dimensions()
        events = real["event"][: self.events_in_snapshot]
        rows: dict[str, list[Row]] = {"category": real["category"], "venue": real["venue"],
                                      "date": real["date"], "event": events}
        dateids = [d["dateid"] for d in real["date"]]
        rows["listing"] = [self.listing(i, events, dateids) for i in range(1, listings + 1)]
        rows["sale"] = [self.sale(i, self.rng.choice(rows["listing"])) for i in range(1, sales + 1)]
        for table, table_rows in rows.items():
            conn = self._conn(table)
            with _cursor(conn) as cur:
                for row in table_rows:
                    self._insert(cur, table, row)
            conn.commit()

    # --- operations -------------------------------------------------------------------------
    def _row(self, table: str, key: int) -> Row | None:
        """One row by key (commits its read: call it before an operation's first write)."""
        contract = self.contracts[table]
        dialect = self._dialect(table)
        names = ", ".join(quote(c, dialect) for c in contract.column_names)
        with _cursor(self._conn(table)) as cur:
            cur.execute(self._sql(table, f"SELECT {names} FROM {{t}} WHERE "  # noqa: S608
                                         f"{quote(contract.primary_key[0], dialect)} = %s"), [key])
            found = cur.fetchone()
        self._conn(table).commit()
        return dict(zip(contract.column_names, found, strict=True)) if found else None

    def _changed(self, table: str, row: Row) -> Row:
        """``row`` with one or two non-key columns changed the way TICKIT data changes."""
        new = dict(row)
        if table == "listing":
            new["priceperticket"] = max(Decimal("1.00"), (row["priceperticket"] * Decimal(
                self.rng.choice(("0.9", "1.1")))).quantize(CENT))
            new["totalprice"] = new["priceperticket"] * new["numtickets"]
        elif table == "sale":
            new["qtysold"] = self.rng.randint(1, 8)
        elif table == "venue":
            new["venueseats"] = self.rng.choice((None, 0, self.rng.randint(1000, 90000)))
        elif table == "event":
            new["starttime"] = row["starttime"] + dt.timedelta(hours=self.rng.choice((-2, -1, 1, 2)))
        elif table == "category":
            new["catdesc"] = f"{row['catdesc'][:40]} {self.rng.randint(1, 99)}"
        elif table == "date":
            new["holiday"] = not row["holiday"]
        return new

    def _update(self, cur: Any, table: str, row: Row) -> None:
        contract = self.contracts[table]
        dialect = self._dialect(table)
        key = contract.primary_key[0]
        sets = ", ".join(f"{quote(c, dialect)} = %s" for c in contract.column_names if c != key)
        values = [row[c] for c in contract.column_names if c != key] + [row[key]]
        cur.execute(self._sql(table, f"UPDATE {{t}} SET {sets} WHERE {quote(key, dialect)} = %s"), values)

    def _delete(self, cur: Any, table: str, key: int) -> None:
        column = quote(self.contracts[table].primary_key[0], self._dialect(table))
        cur.execute(self._sql(table, f"DELETE FROM {{t}} WHERE {column} = %s"), [key])  # noqa: S608

    def step(self) -> str:
        """One random operation on a random table; returns its kind."""
        table = self.rng.choice(("listing", "listing", "sale", "sale", "sale", "venue", "event", "category", "date"))
        keys = self._keys(table)
        kind = self.rng.choices(("insert", "update", "updates_in_tx", "delete", "delete_reinsert", "multi_row"),
                                weights=(4, 4, 1, 2, 1, 1))[0]
        if table in ("category", "date", "venue", "event") and kind == "insert":
            kind = "update"  # the real dimensions keep their keys; new rows come to the facts
        conn = self._conn(table)
        with _cursor(conn) as cur:
            if kind == "insert" or not keys:
                kind = "insert"
                self._insert_new(cur, table)
            elif kind in ("update", "updates_in_tx"):
                row = self._row(table, self.rng.choice(keys))
                assert row is not None
                for _ in range(1 if kind == "update" else self.rng.randint(2, 4)):
                    row = self._changed(table, row)
                    self._update(cur, table, row)
            elif kind == "multi_row":  # several rows changed in one transaction (reads first: they commit)
                rows = [self._row(table, key) for key in self.rng.sample(keys, min(3, len(keys)))]
                for row in rows:
                    assert row is not None
                    self._update(cur, table, self._changed(table, row))
            else:
                key = self.rng.choice(keys)
                if self._referenced(table, key):
                    kind = "update"
                    row = self._row(table, key)
                    assert row is not None
                    self._update(cur, table, self._changed(table, row))
                else:
                    row = self._row(table, key)
                    self._delete(cur, table, key)
                    if kind == "delete_reinsert" and row is not None:
                        self._insert(cur, table, self._changed(table, row))
        conn.commit()
        self._count(kind)
        return kind

    def _insert_new(self, cur: Any, table: str) -> None:
        if table == "listing":
            events = [r for r in (self._row("event", k) for k in self.rng.sample(self._keys("event"), 1)) if r]
            self._insert(cur, table, self.listing(self._new_id(table), events, self._keys("date")))
        else:  # sale
            listing = self._row("listing", self.rng.choice(self._keys("listing")))
            assert listing is not None
            self._insert(cur, table, self.sale(self._new_id(table), listing))

    def truncate_sales(self) -> None:
        """``TRUNCATE`` the sale table (MariaDB's connector sends a truncate event, op ``t``)."""
        conn = self._conn("sale")
        with _cursor(conn) as cur:
            cur.execute(self._sql("sale", "TRUNCATE TABLE {t}"))
        conn.commit()
        self._count("truncate")

    def add_column(self, table: str = "venue", column: str = "venuephone") -> None:
        """A nullable column added mid-stream at the source (not in the contract), then written."""
        conn = self._conn(table)
        dialect = self._dialect(table)
        with _cursor(conn) as cur:
            cur.execute(self._sql(table, f"ALTER TABLE {{t}} ADD COLUMN {quote(column, dialect)} varchar(32)"))
            key = self.rng.choice(self._keys(table))
            cur.execute(self._sql(table, f"UPDATE {{t}} SET {quote(column, dialect)} = %s WHERE "
                                         f"{quote(self.contracts[table].primary_key[0], dialect)} = %s"),
                        ["(555) 010-0000", key])
        conn.commit()
        self._count("add_column")
