"""The simulated source databases: live rows per table and who references whom.

Keeps TICKIT's referential rules checkable in O(1): a reference count per key (a row
may only be deleted when nothing live points at it), the tickets already sold per
listing, and a ``KeyPool`` per table for deterministic random picks.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

Row = dict[str, Any]

#: Foreign keys: table -> [(column, referenced table)].
FOREIGN_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "event": (("venueid", "venue"), ("catid", "category"), ("dateid", "date")),
    "listing": (("sellerid", "user"), ("eventid", "event"), ("dateid", "date")),
    "sale": (("listid", "listing"), ("sellerid", "user"), ("buyerid", "user"), ("eventid", "event"),
             ("dateid", "date")),
}  # fmt: skip

PRIMARY_KEYS = {
    "category": "catid",
    "venue": "venueid",
    "date": "dateid",
    "event": "eventid",
    "user": "userid",
    "listing": "listid",
    "sale": "salesid",
}
TABLES = tuple(PRIMARY_KEYS)


class KeyPool:
    """A set of keys with O(1) add, remove and uniform random choice (deterministic per rng)."""

    def __init__(self) -> None:
        self._keys: list[int] = []
        self._index: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: int) -> bool:
        return key in self._index

    def add(self, key: int) -> None:
        if key not in self._index:
            self._index[key] = len(self._keys)
            self._keys.append(key)

    def remove(self, key: int) -> None:
        index = self._index.pop(key)
        last = self._keys.pop()
        if index < len(self._keys):
            self._keys[index] = last
            self._index[last] = index

    def choice(self, rng: random.Random) -> int:
        return self._keys[rng.randrange(len(self._keys))]


class SourceDatabase:
    def __init__(self) -> None:
        self.rows: dict[str, dict[int, Row]] = {table: {} for table in TABLES}
        self.pools: dict[str, KeyPool] = {table: KeyPool() for table in TABLES}
        self.refs: dict[str, Counter[int]] = {table: Counter() for table in TABLES}
        self.sold: Counter[int] = Counter()  # listid -> tickets sold by live sales
        self.next_id: dict[str, int] = {table: 1 for table in TABLES}

    def get(self, table: str, key: int) -> Row:
        return self.rows[table][key]

    def live(self, table: str, key: int) -> bool:
        return key in self.rows[table]

    def count(self, table: str) -> int:
        return len(self.rows[table])

    def referenced(self, table: str, key: int) -> bool:
        return self.refs[table][key] > 0

    def allocate_id(self, table: str) -> int:
        key = self.next_id[table]
        self.next_id[table] = key + 1
        return key

    def insert(self, table: str, row: Row) -> None:
        key = row[PRIMARY_KEYS[table]]
        if key in self.rows[table]:
            raise KeyError(f"{table} key {key} already live")
        self.rows[table][key] = row
        self.pools[table].add(key)
        self.next_id[table] = max(self.next_id[table], key + 1)
        self._reference(table, row, +1)

    def update(self, table: str, row: Row) -> Row:
        key = row[PRIMARY_KEYS[table]]
        before = self.rows[table][key]
        self._reference(table, before, -1)
        self.rows[table][key] = row
        self._reference(table, row, +1)
        return before

    def delete(self, table: str, key: int) -> Row:
        if self.referenced(table, key):
            raise ValueError(f"{table} key {key} is still referenced")
        row = self.rows[table].pop(key)
        self.pools[table].remove(key)
        self._reference(table, row, -1)
        return row

    def truncate(self, table: str) -> list[Row]:
        """Remove every row of an unreferenced-or-reloaded table (references are kept as counts)."""
        removed = [self.rows[table][key] for key in sorted(self.rows[table])]
        for row in removed:
            self._reference(table, row, -1)
        self.rows[table] = {}
        self.pools[table] = KeyPool()
        return removed

    def _reference(self, table: str, row: Row, delta: int) -> None:
        for column, target in FOREIGN_KEYS.get(table, ()):
            value = row.get(column)
            if value is not None:
                self.refs[target][value] += delta
        if table == "sale":
            self.sold[row["listid"]] += delta * row["qtysold"]

    def dangling_references(self) -> list[str]:
        """Foreign keys of live rows that point at no live row (real TICKIT data has some)."""
        problems = []
        for table, keys in FOREIGN_KEYS.items():
            for row in self.rows[table].values():
                for column, target in keys:
                    value = row.get(column)
                    if value is not None and value not in self.rows[target]:
                        problems.append(f"{table}.{column}={value}")
        return problems
