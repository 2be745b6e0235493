"""Dev/test loader: writes bronze tables through a Thrift server from Python rows.

Until (and besides) the real ingestion, this creates ``bronze.<table>`` for the seven
TICKIT tables and ``bronze.dead_letter`` as parquet tables with exactly the bronze
columns (contract columns, ``_cdc_*`` metadata, Hudi meta columns), and appends change
events commit by commit with increasing ``_hoodie_commit_time`` instants.

Command line (dev): ``python -m tests.dbt_project.bronze_loader --port 10100 [--changes]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Iterable
from decimal import Decimal

from ingestion.catalog.sync import SYNCED_INSTANT_PROPERTY
from ingestion.cdc.contracts import load_contracts
from ingestion.stream.bronze import DEAD_LETTER_TABLE_COLUMNS as DEAD_LETTER_COLUMNS
from lakehouse.services import thrift

HOODIE_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                  "_hoodie_partition_path", "_hoodie_file_name")

def sql_literal(value: object, sql_type: str) -> str:
    """A Spark SQL literal of `value` typed as `sql_type` (NULL typed too)."""
    if value is None:
        return f"cast(null as {sql_type})"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return f"timestamp'{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"date'{value.isoformat()}'"
    if isinstance(value, int | Decimal | float):
        return f"cast({value} as {sql_type})"
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def bronze_columns(table: str) -> tuple[tuple[str, str], ...]:
    """(name, type) of a bronze table: Hudi meta columns first, as a Hudi table has them."""
    base = DEAD_LETTER_COLUMNS if table == "dead_letter" else load_contracts()[table].bronze_columns
    return tuple((name, "string") for name in HOODIE_COLUMNS) + base


class BronzeLoader:
    """Creates and appends to bronze tables through one Thrift connection."""

    def __init__(self, host: str, port: int, schema: str = "bronze"):
        self.host, self.port, self.schema = host, port, schema
        self._last_instant = ""

    def _execute(self, statements: Iterable[str]) -> None:
        with thrift.connect(self.host, self.port) as conn:
            cursor = conn.cursor()
            for statement in statements:
                cursor.execute(statement)
            cursor.close()

    def create_all(self) -> None:
        """(Re)create the schema and every bronze table, empty."""
        tables = [*load_contracts(), "dead_letter"]
        statements = [f"drop schema if exists {self.schema} cascade", f"create schema {self.schema}"]
        for table in tables:
            columns = ", ".join(f"`{name}` {typ}" for name, typ in bronze_columns(table))
            statements.append(f"create table {self.schema}.`{table}` ({columns}) using parquet")
        self._execute(statements)

    def next_instant(self) -> str:
        """A Hudi-style instant (yyyyMMddHHmmssSSS, UTC now), strictly increasing."""
        while True:
            now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
            instant = now.strftime("%Y%m%d%H%M%S") + f"{now.microsecond // 1000:03d}"
            if instant > self._last_instant:
                self._last_instant = instant
                return instant

    def commit(self, events: dict[str, list[dict]]) -> str:
        """Append one commit of events per table; returns the commit instant."""
        instant = self.next_instant()
        ingested_at = dt.datetime.strptime(instant, "%Y%m%d%H%M%S%f")
        statements = []
        for table, rows in events.items():
            if not rows:
                continue
            columns = bronze_columns(table)
            pk = load_contracts()[table].primary_key if table != "dead_letter" else ()
            values = []
            for seqno, row in enumerate(rows):
                record_key = "|".join(str(row.get(k)) for k in pk) + f"|{row.get('_cdc_position')}"
                meta = {"_hoodie_commit_time": instant, "_hoodie_commit_seqno": f"{instant}_0_{seqno}",
                        "_hoodie_record_key": record_key,
                        "_hoodie_partition_path": f"_cdc_source_date={row.get('_cdc_source_date')}",
                        "_hoodie_file_name": f"{table}-{instant}.parquet"}
                full = {**row, **meta}
                if table != "dead_letter" and full.get("_cdc_ingested_at") is None:
                    full["_cdc_ingested_at"] = ingested_at
                values.append("(" + ", ".join(sql_literal(full.get(n), t) for n, t in columns) + ")")
            statements.append(f"insert into {self.schema}.`{table}` values {', '.join(values)}")
            # what the ingestion's catalog sync records on a bronze view: the instant it shows up to
            statements.append(f"alter table {self.schema}.`{table}` set tblproperties "
                              f"('{SYNCED_INSTANT_PROPERTY}' = '{instant}')")
        self._execute(statements)
        return instant


def main() -> None:
    from tests.dbt_project.cdc_fixture import TickitFixture

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=10000)
    parser.add_argument("--changes", action="store_true", help="also commit the change round")
    args = parser.parse_args()
    loader = BronzeLoader(args.host, args.port)
    fixture = TickitFixture()
    loader.create_all()
    print("initial commit", loader.commit(fixture.initial_events()))
    if args.changes:
        print("change commit", loader.commit(fixture.change_events()))


if __name__ == "__main__":
    main()
