"""``signoff db``: create or upgrade the schema, back a SQLite file up, purge what ended
before a date (the audit stays verifiable from a checkpoint)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from signoff.cli.common import DEFAULT_DB, emit, leaf, open_store
from signoff.errors import ConfigurationError
from signoff.times import TIME_HELP, parse_time


def add_db(commands: Any) -> None:
    db = commands.add_parser("db", help="database maintenance",
                             description="Create or upgrade the schema; back it up.")
    db_sub = db.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    leaf(db_sub, "migrate", "create or upgrade the schema (PostgreSQL needs this once)",
         cmd_db_migrate)
    backup = leaf(db_sub, "backup", "copy a SQLite database while it is in use, checked "
                  "(PostgreSQL: use pg_dump)", cmd_db_backup)
    backup.add_argument("destination", help="the new file (never overwritten)")
    purge = leaf(db_sub, "purge", "remove requests that ended before a date, and the audit "
                 "events before them, keeping the chain verifiable from a checkpoint",
                 cmd_db_purge)
    purge.add_argument("--before", required=True, metavar="WHEN",
                       help=f"remove what ended before this time: {TIME_HELP}")
    purge.add_argument("--dry-run", action="store_true",
                       help="count what would go; remove nothing")


def cmd_db_migrate(args: argparse.Namespace) -> int:
    store = open_store(args.db, setup=False, creates=True)
    version = store.migrate()
    emit(args, {"version": version, "backend": store.backend},
         f"{store.backend} schema at version {version}")
    return 0

def cmd_db_backup(args: argparse.Namespace) -> int:
    from signoff.store.backup import PG_DUMP, backup_sqlite  # noqa: PLC0415 (one command's)

    target = args.db or os.environ.get("SIGNOFF_DB") or DEFAULT_DB
    scheme = target.split("://", 1)[0].lower() if "://" in target else None
    if scheme in ("postgresql", "postgres"):
        raise ConfigurationError(f"signoff does not copy a PostgreSQL database; use its own "
                                 f"tools: {PG_DUMP}", code="backup_with_pg_dump")
    store = open_store(args.db)  # a SQLite file that is not signoff's is refused here
    path = str(store.path)  # type: ignore[attr-defined]
    done = backup_sqlite(path, args.destination)
    emit(args, done.to_dict(), f"backed up {path} to {done.path}: {done.bytes} bytes, "
         f"{done.audit_events} audit events, chain verified")
    return 0


def cmd_db_purge(args: argparse.Namespace) -> int:
    import time  # noqa: PLC0415 (one command's)

    from signoff.kernel.accounts import os_actor  # noqa: PLC0415
    from signoff.store.retention import purge  # noqa: PLC0415

    now = time.time()
    before = parse_moment(args.before, now=now)  # a bad date is said before any database
    done = purge(open_store(args.db), before=before, now=now, actor=os_actor(),
                 dry_run=args.dry_run)
    what = "would remove" if done.dry_run else "removed"
    text = (f"{what} {done.requests} requests that ended before {done.iso}, and "
            f"{done.events} audit events")
    if done.anchor is not None:
        text += (f"\nthe audit chain {'would start' if done.dry_run else 'now starts'} after "
                 f"event {done.anchor[0]}, hash {done.anchor[1]}"
                 + ("" if done.dry_run else " (keep this line: it proves what was removed)"))
    emit(args, done.to_dict(), text)
    return 0


def parse_moment(text: str, *, now: float) -> float:
    """``--before``: read as every CLI time option is (``signoff.times``)."""
    return parse_time("--before", text, now=now)
