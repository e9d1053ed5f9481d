"""What proposing a call needs to know about its thread, read once and kept.

Every proposal asks the store three things about its thread: the review mode
stored for it, which tools have a remembered rejection there, and its standing
grants. Each is a read of its own, and on PostgreSQL a round trip of its own;
asked again at every proposal and again when an approved call is re-validated.
``Recall`` reads all three in one statement and keeps the answer until the
store's ``memory_token()`` says the database may have changed: at once after any
commit of this process, and within the store's stated staleness after another
process's (see ``SqliteStore.memory_token``, ``PostgresStore.memory_token``).

Staleness can only cost a question, never an unchecked action: a grant is always
used by a compare-and-set in the proposing transaction (a grant used up or gone
elsewhere is refused there, that commit drops the cache, and the call is evaluated
again), and a rejection decided elsewhere is remembered within the staleness bound,
until which the same call asks a human again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from signoff.model import Grant
from signoff.store.sqltx import SqlTx, grant_from_row

_GRANT = ("id, scope, tool, args, thread_id, session_id, expires_at, max_uses, uses, "
          "created_by, created_at")
# Typed nulls for the other rows' grant columns (PostgreSQL will not guess them).
_PAD = ", ".join(f"CAST(NULL AS {kind})" for kind in (
    "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "DOUBLE PRECISION", "INTEGER", "INTEGER", "TEXT",
    "DOUBLE PRECISION"))
# One statement, three kinds of row: the thread's mode, each tool rejected in it, each
# grant scoped to it (a grant of scope "session" belongs to its session, read apart).
THREAD_SQL = (
    f"SELECT 'grant', {_GRANT} FROM grants WHERE scope != 'session' AND thread_id = ? "
    f"UNION ALL SELECT 'mode', review_mode, {_PAD} FROM threads WHERE id = ? "
    f"UNION ALL SELECT DISTINCT 'rejected', tool, {_PAD} FROM rejections WHERE thread_id = ?")
SESSION_SQL = f"SELECT {_GRANT} FROM grants WHERE scope = 'session' AND session_id = ?"
MAX_KEPT = 4096  # threads (and sessions) kept per token; more starts over


@dataclass(frozen=True, slots=True)
class ThreadMemory:
    mode: str | None  # the review mode stored for the thread
    rejected: frozenset[str]  # tools with a remembered rejection in it
    grants: tuple[tuple[float, Grant], ...]  # (created_at, grant), oldest first


def read_thread(tx: SqlTx, thread_id: str) -> ThreadMemory:
    mode: str | None = None
    rejected: set[str] = set()
    grants: list[tuple[float, Grant]] = []
    for row in tx._exec(THREAD_SQL, (thread_id, thread_id, thread_id)).fetchall():
        if row[0] == "mode":
            mode = row[1]
        elif row[0] == "rejected":
            rejected.add(str(row[1]))
        else:
            grants.append(_grant(row[1:]))
    grants.sort(key=_created)
    return ThreadMemory(mode=mode, rejected=frozenset(rejected), grants=tuple(grants))


def read_session(tx: SqlTx, session_id: str) -> tuple[tuple[float, Grant], ...]:
    rows = tx._exec(SESSION_SQL, (session_id,)).fetchall()
    return tuple(sorted((_grant(row) for row in rows), key=_created))


def _grant(row: Sequence[Any]) -> tuple[float, Grant]:
    return float(row[10]), grant_from_row(row[:10])


def _created(entry: tuple[float, Grant]) -> float:
    return entry[0]


class Recall:
    """The cache: per token, the threads and sessions read since it was taken."""

    def __init__(self, token: Callable[[], object]) -> None:
        self._token = token
        self._lock = threading.Lock()
        self._kept: tuple[object, dict[str, ThreadMemory],
                          dict[str, tuple[tuple[float, Grant], ...]]] = (object(), {}, {})

    def _current(self) -> tuple[dict[str, ThreadMemory],
                                dict[str, tuple[tuple[float, Grant], ...]]]:
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

    def thread(self, thread_id: str, read: Callable[[str], ThreadMemory]) -> ThreadMemory:
        threads, _ = self._current()
        found = threads.get(thread_id)
        if found is None:
            found = read(thread_id)
            if len(threads) >= MAX_KEPT:
                threads.clear()
            threads[thread_id] = found
        return found

    def session(self, session_id: str,
                read: Callable[[str], tuple[tuple[float, Grant], ...]]
                ) -> tuple[tuple[float, Grant], ...]:
        _, sessions = self._current()
        found = sessions.get(session_id)
        if found is None:
            found = read(session_id)
            if len(sessions) >= MAX_KEPT:
                sessions.clear()
            sessions[session_id] = found
        return found
