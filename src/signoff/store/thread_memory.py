"""What proposing a call needs to know about its thread, read once and kept.

Every proposal asks the store three things about its thread: the review mode
stored for it, which tools have a remembered rejection there, and its standing
grants. Each is a read of its own, and on PostgreSQL a round trip of its own;
asked again at every proposal and again when an approved call is re-validated.
``MemoryCache`` reads all three in one statement (with the thread's pending requests,
which a run's start checks on a fresh read) and keeps the answer until the
store's ``memory_token()`` says the database may have changed — at once after a
commit of this process that wrote a mode, a rejection, a grant or a grant's use —
or the entry is older than the store's ``memory_staleness`` (SQLite: 50 ms, for
what other processes wrote; PostgreSQL has none: their ``:memory`` notifications
change the token). Commits that write nothing remembered (requests, decisions, audit events)
keep it.

Staleness can only cost a question, never an unchecked action: a grant is always
used by a compare-and-set in the proposing transaction (a grant used up or gone
elsewhere is refused there, that commit drops the cache, and the call is evaluated
again), and a rejection decided elsewhere is remembered within the staleness bound,
until which the same call asks a human again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from signoff.model import Grant
from signoff.store.records import ThreadMemory
from signoff.store.rows import grant_from_row
from signoff.store.sqltx import SqlTx

__all__ = ["MAX_KEPT", "SESSION_SQL", "THREAD_SQL", "MemoryCache", "ThreadMemory", "merged_grants",
           "read_session", "read_thread"]

_GRANT = ("id, scope, tool, args, thread_id, session_id, expires_at, max_uses, uses, "
          "created_by, args_hash, definition_hash, created_at")
# Typed nulls for the other rows' grant columns (PostgreSQL will not guess them).
_TYPES = ("TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "DOUBLE PRECISION", "INTEGER", "INTEGER",
          "TEXT", "TEXT", "TEXT", "DOUBLE PRECISION")


def _pad(start: int) -> str:
    return ", ".join(f"CAST(NULL AS {kind})" for kind in _TYPES[start:])


# One statement, four kinds of row: the thread's mode, each tool rejected in it, each
# grant scoped to it (a grant of scope "session" belongs to its session, read apart), and
# each request pending on it with its run.
THREAD_SQL = (
    f"SELECT 'grant', {_GRANT} FROM grants WHERE scope != 'session' AND thread_id = ? "
    "UNION ALL SELECT 'mode', review_mode, set_by, waiting_run, CAST(NULL AS TEXT), "
    "CAST(NULL AS TEXT), CAST(NULL AS TEXT), updated_at, "
    f"{_pad(6)} FROM threads WHERE id = ? "
    f"UNION ALL SELECT DISTINCT 'rejected', tool, {_pad(0)} FROM rejections "
    "WHERE thread_id = ? "
    f"UNION ALL SELECT 'pending', id, run_id, {_pad(1)} FROM requests "
    "WHERE thread_id = ? AND status = 'pending'")
SESSION_SQL = f"SELECT {_GRANT} FROM grants WHERE scope = 'session' AND session_id = ?"
MAX_KEPT = 4096  # threads (and sessions) kept per token; more starts over
T = TypeVar("T")


def read_thread(tx: SqlTx, thread_id: str) -> ThreadMemory:
    mode: str | None = None
    mode_by: str | None = None
    mode_run: str | None = None
    mode_at: float | None = None
    rejected: set[str] = set()
    grants: list[tuple[float, Grant]] = []
    pending: list[tuple[str, str | None]] = []
    for row in tx._exec(THREAD_SQL, (thread_id,) * 4).fetchall():
        if row[0] == "grant":
            grants.append(_grant(row[1:]))
        elif row[0] == "mode":
            mode, mode_by, mode_run, mode_at = row[1], row[2], row[3], row[7]
        elif row[0] == "rejected":
            rejected.add(str(row[1]))
        else:
            pending.append((str(row[1]), row[2]))
    grants.sort(key=_created)
    return ThreadMemory(mode=mode, rejected=frozenset(rejected), grants=tuple(grants),
                        pending=tuple(sorted(pending)), mode_by=mode_by,
                        mode_at=None if mode_at is None else float(mode_at), mode_run=mode_run)


def read_session(tx: SqlTx, session_id: str) -> tuple[tuple[float, Grant], ...]:
    rows = tx._exec(SESSION_SQL, (session_id,)).fetchall()
    return tuple(sorted((_grant(row) for row in rows), key=_created))


def _grant(row: Sequence[Any]) -> tuple[float, Grant]:
    return float(row[12]), grant_from_row(row[:12])


def _created(entry: tuple[float, Grant]) -> float:
    return entry[0]


def merged_grants(memory: ThreadMemory | None,
                  session: tuple[tuple[float, Grant], ...] = ()) -> list[Grant]:
    """A thread's grants and its session's, oldest first."""
    found = [*(memory.grants if memory is not None else ()), *session]
    if memory is not None and session:
        found.sort(key=_created)
    return [grant for _, grant in found]


class MemoryCache:
    """The cache: per token, the threads and sessions read since it was taken, each kept
    for at most ``staleness`` seconds from the moment its read began (``None``: until
    the token changes)."""

    def __init__(self, token: Callable[[], object], staleness: float | None) -> None:
        self._token = token
        self._staleness = staleness
        self._lock = threading.Lock()
        self._kept: tuple[object, dict[str, tuple[float, ThreadMemory]],
                          dict[str, tuple[float, tuple[tuple[float, Grant], ...]]]] = (
            object(), {}, {})

    def _current(self) -> tuple[dict[str, tuple[float, ThreadMemory]],
                                dict[str, tuple[float, tuple[tuple[float, Grant], ...]]]]:
        # The token is taken before any read, so a commit during the read changes it and
        # the next call reads again.
        token = self._token()
        kept = self._kept
        if kept[0] != token:
            with self._lock:
                kept = self._kept
                if kept[0] != token:
                    kept = self._kept = (token, {}, {})
        return kept[1], kept[2]

    def _fresh(self, entry: tuple[float, T], now: float) -> bool:
        return self._staleness is None or now - entry[0] < self._staleness

    def thread(self, thread_id: str, read: Callable[[str], ThreadMemory], *,
               fresh: bool = False) -> ThreadMemory:
        return self._get(self._current()[0], thread_id, read, fresh=fresh)

    def remembered(self, thread_id: str) -> ThreadMemory | None:
        """The thread's memory if it is kept and still fresh, else ``None``: never reads."""
        entry = self._current()[0].get(thread_id)
        if entry is not None and self._fresh(entry, time.monotonic()):
            return entry[1]
        return None

    def session(self, session_id: str,
                read: Callable[[str], tuple[tuple[float, Grant], ...]]
                ) -> tuple[tuple[float, Grant], ...]:
        return self._get(self._current()[1], session_id, read)

    def _get(self, kept: dict[str, tuple[float, T]], key: str, read: Callable[[str], T], *,
             fresh: bool = False) -> T:
        now = time.monotonic()
        entry = None if fresh else kept.get(key)
        if entry is not None and self._fresh(entry, now):
            return entry[1]
        value = read(key)
        if len(kept) >= MAX_KEPT:
            kept.clear()
        kept[key] = (now, value)
        return value
