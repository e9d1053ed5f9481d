"""Rows of a thread's memory: remembered rejections, kept reviews, grants, its review mode
and who asked on it, for both SQL stores.

``ThreadRows`` is mixed into ``SqlTx``. Every write to what ``signoff.store.thread_memory``
remembers sets ``memory_changed``, so that the store drops what it remembers at commit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from signoff.model import Grant, RecalledCall, Rejection
from signoff.store.rows import GRANT_COLUMNS, dumps_sorted

if TYPE_CHECKING:
    from signoff.store.dialect import Dialect

# Raises (``signoff_expect_one``) unless a thread has no mode, rejection or own grant.
_NO_THREAD_MEMORY = (
    "SELECT signoff_expect_one(CASE WHEN EXISTS (SELECT 1 FROM threads WHERE id = ?) "
    "OR EXISTS (SELECT 1 FROM rejections WHERE thread_id = ?) "
    "OR EXISTS (SELECT 1 FROM grants WHERE scope != 'session' AND thread_id = ?) "
    "THEN 0 ELSE 1 END, ?)")


class ThreadRows:
    """Transaction methods; ``SqlTx`` supplies ``_exec``, ``_one``, ``_defer``, ``dialect``
    and ``memory_changed``."""

    dialect: Dialect
    memory_changed: bool

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _one(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _defer(self, statement: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError

    def expect_no_thread_memory(self, thread_id: str) -> None:
        """This transaction commits only if ``thread_id`` has no memory — no stored mode, no
        rejection, no grant of its own (``thread_memory.THREAD_SQL``'s rows but the pending
        requests) — or it writes nothing (``changed_underneath``). PostgreSQL only: kept
        back, it travels with the writes."""
        if not self.dialect.seals_later:
            raise ValueError("only a PostgreSQL transaction takes thread memory unread")
        self._defer(_NO_THREAD_MEMORY, (thread_id, thread_id, thread_id,
                                        f"thread {thread_id} has memory"))

    # ---- rejections, reviews and grants -----------------------------------------------------

    def put_rejection(self, rejection: Rejection, *, at: float) -> None:
        self.memory_changed = True
        self._defer("INSERT INTO rejections (thread_id, tool, args_hash, reason, alternatives, "
                   "request_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                   "ON CONFLICT (thread_id, tool, args_hash) DO UPDATE SET "
                   "reason = excluded.reason, alternatives = excluded.alternatives, "
                   "request_id = excluded.request_id, created_at = excluded.created_at",
                   (rejection.thread_id, rejection.tool, rejection.args_hash, rejection.reason,
                    json.dumps(list(rejection.alternatives)), rejection.request_id, at))

    def recall_call(self, thread_id: str, call_id: str) -> RecalledCall | None:
        rows = self._exec(
            "SELECT 'request', args_hash, review FROM requests WHERE thread_id = ? AND "
            "call_id = ? UNION ALL SELECT 'review', args_hash, record FROM reviews "
            "WHERE thread_id = ? AND call_id = ?", (thread_id, call_id, thread_id, call_id)
        ).fetchall()
        if not rows:
            return None
        found = {kind: (hash_, record) for kind, hash_, record in rows}
        hash_, record = found.get("request") or found["review"]
        record = record or found.get("review", (None, None))[1]
        return RecalledCall(args_hash=hash_, requested="request" in found,
                            review=json.loads(record) if record else None)

    def put_review(self, thread_id: str, call_id: str, *, args_hash: str,
                   record: Mapping[str, Any], at: float) -> None:
        """Keep a call's auto review (the first one kept stands: a call is reviewed once)."""
        self._defer("INSERT INTO reviews (thread_id, call_id, args_hash, record, created_at) "
                   "VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id, call_id) DO NOTHING",
                   (thread_id, call_id, args_hash, dumps_sorted(dict(record)), at))

    def rejection_for(self, thread_id: str, tool: str, args_hash: str) -> Rejection | None:
        row = self._one("SELECT reason, alternatives, request_id FROM rejections "
                        "WHERE thread_id = ? AND tool = ? AND args_hash = ?",
                        (thread_id, tool, args_hash))
        if row is None:
            return None
        return Rejection(thread_id=thread_id, tool=tool, args_hash=args_hash, reason=row[0],
                         alternatives=tuple(json.loads(row[1])), request_id=row[2])

    def insert_grant(self, grant: Grant, *, at: float, request_id: str | None) -> None:
        self.memory_changed = True
        self._defer(f"INSERT INTO grants ({GRANT_COLUMNS}, created_at, request_id) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (grant.id, grant.scope.value, grant.tool,
                    json.dumps(dict(grant.args), sort_keys=True), grant.thread_id,
                    grant.session_id, grant.expires_at, grant.max_uses, grant.uses,
                    grant.created_by, grant.args_hash, grant.definition_hash, at,
                    request_id))

    def use_grant(self, grant_id: str) -> bool:
        self.memory_changed = True
        cursor = self._exec("UPDATE grants SET uses = uses + 1 WHERE id = ? AND "
                            "(uses < COALESCE(max_uses, CASE scope WHEN 'once' THEN 1 END) "
                            "OR (max_uses IS NULL AND scope != 'once'))", (grant_id,))
        return bool(cursor.rowcount == 1)

    # ---- modes and parties ---------------------------------------------------------------------

    def thread_mode(self, thread_id: str) -> str | None:
        row = self._one("SELECT review_mode FROM threads WHERE id = ?", (thread_id,))
        return row[0] if row else None

    def set_thread_mode(self, thread_id: str, mode: str, *, at: float,
                        by: str | None = None, waiting_run: str | None = None) -> None:
        """Store the mode, and the run waiting on the thread now (``waiting_run``, else the
        run of its oldest pending request, if any): that run takes the mode when it
        resumes."""
        self.memory_changed = True
        row = (waiting_run,) if waiting_run is not None else self._one(
            "SELECT run_id FROM requests WHERE thread_id = ? AND status = 'pending' "
            "AND run_id IS NOT NULL ORDER BY created_at LIMIT 1", (thread_id,))
        # One upsert: two transactions setting one thread's first mode at once (nothing
        # orders them any more but this row) must not both insert it.
        self._exec("INSERT INTO threads (id, review_mode, updated_at, set_by, waiting_run) "
                   "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                   "review_mode = excluded.review_mode, updated_at = excluded.updated_at, "
                   "set_by = excluded.set_by, waiting_run = excluded.waiting_run",
                   (thread_id, mode, at, by, row[0] if row else None))

    def thread_executing(self, thread_id: str) -> bool:
        """A call of the thread is executing: its mode must not change under it."""
        return self._one("SELECT 1 FROM requests WHERE thread_id = ? AND status = 'executing' "
                         "LIMIT 1", (thread_id,)) is not None

    def thread_parties(self, thread_id: str) -> frozenset[str]:
        """Every principal and agent that ever asked for a call on the thread."""
        rows = self._exec("SELECT DISTINCT principal, agent FROM requests WHERE thread_id = ?",
                          (thread_id,)).fetchall()
        return frozenset(name for row in rows for name in row if name)
