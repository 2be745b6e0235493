"""``lakehouse dead-letter list|replay``: inspect bad lines and re-submit fixed or reclassified ones."""

from __future__ import annotations

import argparse
import json
import sys

from lakehouse.cli._common import CliError, UsageError
from lakehouse.config import load_settings


def _filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lake", help="lake root (default: $LAKEHOUSE_LAKE)")
    parser.add_argument("--reason", help="only this reason code (e.g. type_mismatch)")
    parser.add_argument("--topic", help="only lines of this topic")
    parser.add_argument("--table", help="only lines of this bronze table")
    parser.add_argument("--id", action="append", dest="ids", metavar="DEAD_LETTER_ID",
                        help="only this dead letter (repeatable)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dead-letter",
        help="list or replay the lines in bronze.dead_letter",
        description="Bad lines (malformed JSON, bad encoding, missing keys, unknown ops/topics, type or schema "
        "mismatches) are kept in <lake>/bronze/dead_letter with their reason.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="print dead letters in topic/partition/offset order")
    _filters(listing)
    listing.add_argument("--limit", type=int, default=50, help="at most N lines (default 50; 0 = all)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line, raw line included")
    listing.set_defaults(func=run_list)
    replaying = actions.add_parser(
        "replay", help="re-parse selected lines (optionally corrected) and move the valid ones into bronze",
        description="Re-parse the selected dead letters with the current contracts, or with corrected lines "
        "from --fixes (JSON lines: {\"dead_letter_id\": ..., \"raw_line\": ..., \"topic\": optional}). Lines "
        "that now parse are inserted into bronze (idempotent) and removed from the dead-letter table; the "
        "others stay. Run 'lakehouse sync' (or keep the stream running) to publish the result.",
    )
    _filters(replaying)
    replaying.add_argument("--fixes", metavar="FILE", help="corrected lines (JSON lines)")
    replaying.add_argument("--all", action="store_true", help="replay every dead letter (no filter given)")
    replaying.add_argument("--dry-run", action="store_true", help="report what would be replayed; write nothing")
    replaying.add_argument("--schema-registry-url", metavar="URL",
                           help="decode Kafka records' Avro values (Confluent wire format: registry_unavailable, "
                           "unknown_schema_id) with their writer schemas from this registry")
    replaying.set_defaults(func=run_replay)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def _select(args: argparse.Namespace, limit: int | None = None) -> tuple[str, list[dict]]:
    from ingestion.stream.dead_letters import list_dead_letters

    lake = args.lake or load_settings().lake
    rows = list_dead_letters(lake, reason=args.reason, topic=args.topic, table=args.table, ids=args.ids,
                             limit=limit)
    return lake, rows


def run_list(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise UsageError(f"--limit must be >= 0, got {args.limit}")
    _, rows = _select(args, args.limit or None)
    for row in rows:
        if args.json:
            sys.stdout.write(json.dumps(row, default=str, sort_keys=True) + "\n")
        else:
            where = f"{row['topic']}[{row['kafka_partition']}]@{row['kafka_offset']}"
            sys.stdout.write(f"{row['dead_letter_id']}  {row['reason']:<19} {where:<32} {row['message']}\n")
    if not args.json:
        sys.stderr.write(f"{len(rows)} dead letters\n")
    return 0


def run_replay(args: argparse.Namespace) -> int:
    from ingestion.lake_lock import LakeLockedError, LakeLockError
    from ingestion.stream.dead_letters import DeadLetterError, load_fixes, replay
    from ingestion.stream.hudi_tables import ForeignBloomFiltersError
    from ingestion.stream.late_copies import ReusedOffsetsError

    if not (args.all or args.reason or args.topic or args.table or args.ids or args.fixes):
        raise UsageError("replay needs a selection", "use --reason/--topic/--table/--id/--fixes, or --all")
    try:
        fixes = load_fixes(args.fixes) if args.fixes else None
        if fixes and not args.ids and not (args.reason or args.topic or args.table):
            args.ids = list(fixes)
        lake, rows = _select(args)
        result = replay(lake, rows, fixes=fixes, dry_run=args.dry_run, schema_registry_url=args.schema_registry_url)
    except (DeadLetterError, ReusedOffsetsError, FileNotFoundError) as exc:
        raise CliError(str(exc)) from None
    except (ForeignBloomFiltersError, LakeLockedError, LakeLockError) as exc:
        raise CliError(str(exc), exc.hint) from None
    verb = "would replay" if args.dry_run else "replayed"
    sys.stdout.write(f"{verb} {sum(result.replayed.values())} events of {result.selected} selected lines "
                     f"{dict(sorted(result.replayed.items()))}; {result.tombstones} tombstones; "
                     f"{len(result.still_bad)} still bad\n")
    if result.not_found:
        sys.stdout.write(f"  {len(result.not_found)} fixes name no current dead letter (already replayed?): "
                         f"{', '.join(result.not_found[:5])}\n")
    for bad in result.still_bad:
        sys.stdout.write(f"  still bad {bad['dead_letter_id']}: {bad['reason']}: {bad['message']}\n")
    return 0
