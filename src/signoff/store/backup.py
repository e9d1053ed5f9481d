"""``signoff db backup``: a consistent copy of a SQLite database while it is in use.

SQLite's online backup API copies the database page by page, restarting if a writer
changes a page already copied, so the copy is one committed state even while servers
write. The copy goes to a temporary file beside the destination and is checked before
it takes the destination's name: ``PRAGMA integrity_check`` and the audit chain. A
backup that does not verify is never left where a restore would find it.

PostgreSQL has its own tools: ``pg_dump`` (docs/cli.md, "signoff db backup").
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from signoff.audit import GENESIS, Verification, verify
from signoff.errors import ConfigurationError, StoreError
from signoff.store.records import Backup
from signoff.store.rows import audit_from_row

__all__ = ["PAGES_PER_STEP", "PG_DUMP", "Backup", "backup_sqlite"]

PAGES_PER_STEP = 1024  # pages copied between yields to writers (4 MiB at 4 KiB pages)

PG_DUMP = ("pg_dump --format=custom --file=signoff.dump 'postgresql://…'  "
           "(restore: pg_restore --dbname='postgresql://…' signoff.dump)")


def backup_sqlite(source: str, destination: str | Path) -> Backup:
    """Copy the SQLite database at ``source`` to ``destination`` (which must not exist)."""
    target = Path(destination)
    if target.exists():
        raise ConfigurationError(f"{target} exists: a backup never overwrites a file; "
                                 "choose a new name", code="backup_exists")
    if not target.parent.is_dir():
        raise ConfigurationError(f"{target.parent} is not a directory",
                                 code="backup_no_directory")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        with contextlib.closing(sqlite3.connect(source)) as src, \
                contextlib.closing(sqlite3.connect(partial)) as dst:
            src.backup(dst, pages=PAGES_PER_STEP)
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            problem = dst.execute("PRAGMA integrity_check").fetchone()[0]
        if problem != "ok":
            raise StoreError(f"the copy failed SQLite's integrity check: {problem}",
                             code="backup_failed")
        checked, head = _verify_copy(partial)
        if not checked.ok:
            raise StoreError(f"the copy's audit chain does not verify at index "
                             f"{checked.first_bad}: {checked.reason}", code="backup_failed")
        os.replace(partial, target)
    except sqlite3.Error as exc:
        raise StoreError(f"the backup failed: {exc}", code="backup_failed") from exc
    finally:
        for leftover in (partial, *(partial.with_name(partial.name + s)
                                    for s in ("-wal", "-shm", "-journal"))):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    return Backup(path=str(target), bytes=target.stat().st_size,
                  audit_events=checked.count, audit_head=head[1])


def _verify_copy(path: Path) -> tuple[Verification, tuple[int, str]]:
    """The copy's audit chain against its head, read only (nothing of the copy changes)."""
    with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                            uri=True)) as conn:
        row = conn.execute("SELECT idx, hash FROM audit_head WHERE id = 1").fetchone()
        head = (int(row[0]), str(row[1]))
        top = conn.execute("SELECT idx, hash FROM audit_checkpoints ORDER BY idx DESC "
                           "LIMIT 1").fetchone()
        anchor = (0, GENESIS) if top is None else (int(top[0]), str(top[1]))
        rows = conn.execute("SELECT idx, at_us, kind, request_id, actor, data, prev_hash, hash "
                            "FROM audit WHERE idx > ? ORDER BY idx", (anchor[0],))
        return verify((audit_from_row(r) for r in rows), head=head, anchor=anchor), head
