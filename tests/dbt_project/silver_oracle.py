"""Compare silver relations with an oracle of live rows, row by row, through a Thrift server.

Silver renames source columns (``salesid`` -> ``sale_id``); ``SILVER_COLUMNS`` is that
mapping, restated here independently of the SQL so a wrong rename in a model fails the
comparison.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from lakehouse.services import thrift

#: table -> (silver relation, {source column: silver column}), primary key first.
SILVER_COLUMNS: dict[str, tuple[str, dict[str, str]]] = {
    "date": ("dates", {"dateid": "date_id", "caldate": "calendar_date", "day": "day_of_week",
                       "week": "week_of_year", "month": "month_name", "qtr": "quarter", "year": "year",
                       "holiday": "is_holiday"}),
    "listing": ("listings", {"listid": "listing_id", "sellerid": "seller_id", "eventid": "event_id",
                             "dateid": "date_id", "numtickets": "num_tickets", "priceperticket": "price_per_ticket",
                             "totalprice": "total_price", "listtime": "list_time"}),
    "sale": ("sales", {"salesid": "sale_id", "listid": "listing_id", "sellerid": "seller_id",
                       "buyerid": "buyer_id", "eventid": "event_id", "dateid": "date_id", "qtysold": "qty_sold",
                       "pricepaid": "price_paid", "commission": "commission", "saletime": "sale_time"}),
    "category": ("categories", {"catid": "category_id", "catgroup": "category_group", "catname": "category_name",
                                "catdesc": "category_description"}),
    "event": ("events", {"eventid": "event_id", "venueid": "venue_id", "catid": "category_id", "dateid": "date_id",
                         "eventname": "event_name", "starttime": "start_time"}),
    "venue": ("venues", {"venueid": "venue_id", "venuename": "venue_name", "venuecity": "venue_city",
                         "venuestate": "venue_state", "venueseats": "venue_seats"}),
    "user": ("users", {"userid": "user_id", "username": "username", "firstname": "first_name",
                       "lastname": "last_name", "city": "city", "state": "state", "email": "email", "phone": "phone",
                       **{f"like{x}": f"likes_{x}" for x in ("sports", "theatre", "concerts", "jazz", "classical",
                                                             "opera", "rock", "vegas", "broadway", "musicals")}}),
}


def silver_columns(table: str) -> tuple[str, dict[str, str]]:
    """``SILVER_COLUMNS`` of ``table``; a table onboarded later by ``lakehouse tables add`` (not
    restated here) follows that command's convention: the table's plural, source names kept."""
    if table in SILVER_COLUMNS:
        return SILVER_COLUMNS[table]
    from ingestion.cdc.contracts import load_contracts
    from lakehouse.onboarding import plural

    return plural(table), {name: name for name in load_contracts()[table].column_names}


def normalize(value: object) -> object:
    """One comparable form for values coming back from PyHive or from Python rows."""
    if isinstance(value, Decimal):
        return value.quantize(Decimal("0.01")) if value.as_tuple().exponent >= -2 else value
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    # PyHive returns timestamps as strings: '2008-01-01 00:00:00' (maybe with a zero fraction).
    if isinstance(value, str) and len(value) >= 19 and value[4:5] == "-" and value[10:11] == " " \
            and value[13:14] == ":":
        return value[:19] if value[19:].strip(".0") == "" else value
    return value


def silver_rows(host: str, port: int, table: str, schema: str = "silver") -> dict[tuple, dict]:
    """Rows of the silver relation of `table`, keyed by primary key, with source column names."""
    relation, columns = SILVER_COLUMNS[table]
    select = ", ".join(f"{silver} as `{source}`" for source, silver in columns.items())
    rows = thrift.run_sql(host, port, f"select {select} from {schema}.{relation}")
    names = list(columns)
    out: dict[tuple, dict] = {}
    for row in rows:
        record = {n: normalize(v) for n, v in zip(names, row, strict=True)}
        key = (record[names[0]],)
        if key in out:
            raise AssertionError(f"silver.{relation}: duplicate key {key}")
        out[key] = record
    return out


def oracle_rows(live: dict[tuple, dict], table: str) -> dict[tuple, dict]:
    """Oracle live rows normalized like silver_rows (source column names)."""
    _, columns = SILVER_COLUMNS[table]
    return {tuple(normalize(k) for k in key): {c: normalize(row.get(c)) for c in columns} for key, row in live.items()}


def differences(actual: dict[tuple, dict], expected: dict[tuple, dict], limit: int = 5) -> list[str]:
    """Human-readable differences (missing, unexpected, changed keys), at most `limit` of each."""
    missing = sorted(set(expected) - set(actual))[:limit]
    extra = sorted(set(actual) - set(expected))[:limit]
    changed = [k for k in sorted(set(actual) & set(expected)) if actual[k] != expected[k]][:limit]
    out = [f"missing key {k}: {expected[k]}" for k in missing]
    out += [f"unexpected key {k}: {actual[k]}" for k in extra]
    for k in changed:
        diff = {c: (actual[k][c], expected[k][c]) for c in expected[k] if actual[k][c] != expected[k][c]}
        out.append(f"key {k} differs (silver, oracle): {diff}")
    return out


def table_location(host: str, port: int, relation: str) -> str:
    """The storage location of a table, as the metastore records it (``describe formatted``)."""
    for name, value, *_ in thrift.run_sql(host, port, f"describe formatted {relation}"):
        if (name or "").strip() == "Location":
            return value.strip()
    raise AssertionError(f"{relation}: no Location in describe formatted")


def hudi_rs_rows(location: str) -> list[dict]:
    """Every row of the Hudi table at ``location``'s latest snapshot, read by hudi-rs (not by Spark);
    a location on S3 with the environment's endpoint and keys."""
    from ingestion.stream.reading import read_latest

    rows = read_latest(location.removeprefix("file:"))
    return rows.to_pylist() if rows is not None else []


def silver_differences(host: str, port: int, landing: str) -> dict[str, list[str]]:
    """Per table, how silver differs from the simulator's oracle of ``landing``: the published
    relation (read by Spark through the Thrift server) and the live rows of its state table's
    Hudi files (read by hudi-rs; a state model that is a view has none). Empty when every table
    equals the oracle."""
    from ingestion.cdc.contracts import load_contracts
    from simulator.oracle import load_oracle

    oracle = load_oracle(landing)
    problems = {}
    # the small entities' state models are views over their change log: no Hudi files of their own
    views = {row[1] for row in thrift.run_sql(host, port, "show views in silver")}
    for table, contract in load_contracts().items():
        live = oracle_rows({tuple(row[k] for k in contract.primary_key): row for row in oracle.live_rows(table)},
                           table)
        diff = differences(silver_rows(host, port, table), live)
        if f"{SILVER_COLUMNS[table][0]}_cdc_state" not in views:
            diff += [f"hudi-rs: {d}" for d in differences(state_live_rows_by_hudi_rs(host, port, table), live)]
        if diff:
            problems[table] = diff
    return problems


def state_live_rows_by_hudi_rs(host: str, port: int, table: str, schema: str = "silver") -> dict[tuple, dict]:
    """The live rows of `table`'s silver state table, read from its Hudi files by hudi-rs.

    The live-row rule is restated here from the documented CDC semantics (the latest event
    per key; not a delete; newer than the table's latest truncate), independently of the
    published silver view's SQL.
    """
    relation, columns = SILVER_COLUMNS[table]
    rows = hudi_rs_rows(table_location(host, port, f"{schema}.{relation}_cdc_state"))
    truncates = [row["cdc_position"] for row in rows if row["is_truncate"]]
    truncated_before = max(truncates) if truncates else None
    out: dict[tuple, dict] = {}
    for row in rows:
        if row["is_truncate"] or row["is_deleted"]:
            continue
        if truncated_before is not None and row["cdc_position"] <= truncated_before:
            continue
        record = {source: normalize(row[silver]) for source, silver in columns.items()}
        key = (record[next(iter(columns))],)
        if key in out:
            raise AssertionError(f"{schema}.{relation}_cdc_state: duplicate key {key} in the Hudi files")
        out[key] = record
    return out
