"""Reads both SQL stores share, written against ``SqlTx``; backends supply ``_reader``."""

from __future__ import annotations

import abc
import contextvars
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from signoff.audit import GENESIS, AuditEvent, Verification, verify
from signoff.identity import Identity
from signoff.model import (
    ApprovalRequest,
    DecisionRecord,
    Grant,
    RecalledCall,
    Rejection,
    RequestStatus,
)
from signoff.store.accounts import AccountReads
from signoff.store.capabilities import Capability, SealsAfterCommit
from signoff.store.checkpoints import CheckpointReads
from signoff.store.deliveries import DeliveryReads
from signoff.store.insights import InsightReads
from signoff.store.pages import RequestQuery, after_key
from signoff.store.passkeys import PasskeyReads
from signoff.store.receipts import ReceiptReads
from signoff.store.records import Approvals, Event
from signoff.store.rows import audit_from_row, request_from_row
from signoff.store.signatures import SignatureReads
from signoff.store.sqltx import _SELECT_REQUEST, SqlTx
from signoff.store.thread_memory import (
    MemoryCache,
    ThreadMemory,
    merged_grants,
    read_session,
    read_thread,
)

_AUDIT_PAGE = 1000

# The thread whose memory this context takes for empty without reading it
# (``SqlStore.assuming_no_thread_memory``).
_ASSUMED_EMPTY: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "signoff_assumed_empty_thread", default=None)
_NO_MEMORY = ThreadMemory(mode=None, rejected=frozenset(), grants=())


class SqlStore(AccountReads, DeliveryReads, SignatureReads, PasskeyReads, CheckpointReads,
               ReceiptReads, InsightReads, abc.ABC):
    """Read helpers over a short read from ``_reader()``, which each backend supplies
    (accounts and sessions: ``AccountReads``; notifications: ``DeliveryReads``)."""

    backend = "sql"
    capabilities: frozenset[Capability] = frozenset()

    @abc.abstractmethod
    def _reader(self) -> AbstractContextManager[SqlTx]:
        """A ``SqlTx`` for reads only (SQLite: the thread's connection; PostgreSQL:
        an autocommit connection)."""

    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[SqlTx]: ...

    def get_request(self, request_id: str) -> ApprovalRequest | None:
        with self._reader() as tx:
            return tx.get_request(request_id)

    def request_and_user(self, request_id: str, user: str
                         ) -> tuple[ApprovalRequest | None, Identity | None]:
        with self._reader() as tx:
            return tx.get_request_and_user(request_id, user, lock=False)

    def request_to_run(self, request_id: str
                       ) -> tuple[ApprovalRequest | None, Approvals | None]:
        with self._reader() as tx:
            return tx.request_to_run(request_id)

    def finish_execution(self, request_id: str, fencing_token: int, *, event: Event,
                         **changes: Any) -> bool:
        """``Tx.finish_execution`` with its event, in a transaction of its own."""
        with self.transaction() as tx:
            return tx.finish_execution(request_id, fencing_token, event=event, **changes)

    def list_requests(self, *, status: RequestStatus | None = None,
                      thread_id: str | None = None, limit: int = 100,
                      query: RequestQuery | None = None,
                      after: tuple[float, str] | None = None) -> list[ApprovalRequest]:
        """Newest first (``created_at DESC, id``); ``query`` narrows, ``after`` is the last
        key of the page before (``signoff.store.pages``: a keyset, never an offset)."""
        if query is None:
            query = RequestQuery(status=status, thread_id=thread_id)
        elif status is not None or thread_id is not None:
            raise TypeError("give status and thread_id in the query")
        clauses, params = query.where()
        if after is not None:
            clause, more = after_key(after)
            clauses.append(clause)
            params += more
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._reader() as tx:
            rows = tx._exec(f"{_SELECT_REQUEST}{where} ORDER BY created_at DESC, id LIMIT ?",
                            [*params, limit]).fetchall()
            return [request_from_row(r) for r in rows]

    def decisions(self, request_id: str) -> list[DecisionRecord]:
        with self._reader() as tx:
            return tx.decisions(request_id)

    def seal(self, *, wait: float = 1.0) -> bool:
        """Chain every event committed before the call (PostgreSQL seals after commit,
        ``signoff.store.sealer``; SQLite chains inside the transaction: nothing to do).
        ``False``: some are still held by a running transaction after ``wait`` seconds."""
        return True

    def audit_events(self, *, after: int = 0, limit: int | None = None,
                     seal: bool = True) -> Iterator[AuditEvent]:
        """Sealed events with index > ``after``, in order, fetched a page at a time;
        ``seal``: seal what was committed before first (a live feed, which follows the
        sealer's wake-ups instead, passes ``False``)."""
        if seal:
            self.seal()
        remaining = limit
        cursor = after
        while remaining is None or remaining > 0:
            page = _AUDIT_PAGE if remaining is None else min(_AUDIT_PAGE, remaining)
            with self._reader() as tx:
                rows = tx._exec("SELECT idx, at_us, kind, request_id, actor, data, prev_hash, "
                                "hash FROM audit WHERE idx > ? ORDER BY idx LIMIT ?",
                                (cursor, page)).fetchall()
            if not rows:
                return
            for row in rows:
                event = audit_from_row(row)
                cursor = event.index
                yield event
            if remaining is not None:
                remaining -= len(rows)
            if len(rows) < page:
                return

    def audit_head(self) -> tuple[int, str]:
        """The last index and hash as recorded when it was appended."""
        with self._reader() as tx:
            row = tx._one("SELECT idx, hash FROM audit_head WHERE id = 1")
        return int(row[0]), str(row[1])

    def created_after(self, index: int, limit: int
                      ) -> tuple[int, list[tuple[int, ApprovalRequest | None]]]:
        with self._reader() as tx:
            return tx.created_after(index, limit)

    def audit_anchor(self) -> tuple[int, str]:
        """The newest retention checkpoint: the index and hash of the last event a purge
        removed (``signoff.store.retention``); ``(0, GENESIS)`` when none was."""
        with self._reader() as tx:
            row = tx._one("SELECT idx, hash FROM audit_checkpoints ORDER BY idx DESC LIMIT 1")
        return (0, GENESIS) if row is None else (int(row[0]), str(row[1]))

    def verify_audit(self, *, tap: Callable[[AuditEvent], None] | None = None
                     ) -> Verification:
        """Verify the whole sealed chain against the recorded head, and say how many
        committed events are not sealed yet (held by a running transaction); ``tap`` sees
        every event the walk found good."""
        self.seal()
        anchor = self.audit_anchor()
        events = self.audit_events(after=anchor[0], seal=False)
        result = verify(events if tap is None else _tapped(events, tap),
                        head=self.audit_head(), anchor=anchor)
        count, since = self.unsealed() if isinstance(self, SealsAfterCommit) else (0, None)
        if count:
            result = dataclasses.replace(result, unsealed=count, unsealed_since_us=since)
        return result

    def user_by_token(self, token_hash: str) -> Identity | None:
        with self._reader() as tx:
            return tx.user_by_token(token_hash)

    def rejection_for(self, thread_id: str, tool: str, args_hash: str) -> Rejection | None:
        with self._reader() as tx:
            return tx.rejection_for(thread_id, tool, args_hash)

    def recall_call(self, thread_id: str, call_id: str) -> RecalledCall | None:
        with self._reader() as tx:
            return tx.recall_call(thread_id, call_id)

    def on_close(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` first thing in ``close()``: whoever writes in the background (the
        verdict log) finishes before the connections go."""
        hooks: list[Callable[[], None]] = self.__dict__.setdefault("_close_hooks", [])
        hooks.append(hook)

    def _run_close_hooks(self) -> None:
        for hook in self.__dict__.pop("_close_hooks", []):
            hook()

    @property
    def _memory_cache(self) -> MemoryCache:
        cache: MemoryCache | None = self.__dict__.get("_memory_cache_kept")
        if cache is None:
            cache = self.__dict__.setdefault(
                "_memory_cache_kept", MemoryCache(self.memory_token, self.memory_staleness))
        return cache

    def _read_thread(self, thread_id: str) -> ThreadMemory:
        with self._reader() as tx:
            return read_thread(tx, thread_id)

    def _read_session(self, session_id: str) -> tuple[tuple[float, Grant], ...]:
        with self._reader() as tx:
            return read_session(tx, session_id)

    def thread_memory(self, thread_id: str, *, fresh: bool = False) -> ThreadMemory:
        """The thread's stored mode, rejected tools, grants and pending requests
        (``signoff.store.thread_memory``); ``fresh``: read now (and remember that)."""
        if not fresh and _ASSUMED_EMPTY.get() == thread_id:
            return _NO_MEMORY
        return self._memory_cache.thread(thread_id, self._read_thread, fresh=fresh)

    # PostgreSQL: a proposal may take a thread's memory for empty, and a decision a request
    # it knows for current, unread, if its write then requires it (``Tx.expect_*``): a
    # round trip less.
    guards_unread = False

    @contextmanager
    def assuming_no_thread_memory(self, thread_id: str) -> Iterator[None]:
        """While the block runs, in this context only, ``thread_memory(thread_id)`` is empty
        without a read: for a caller whose writes then require it to be
        (``Tx.expect_no_thread_memory``), and who starts again if they are refused."""
        token = _ASSUMED_EMPTY.set(thread_id)
        try:
            yield
        finally:
            _ASSUMED_EMPTY.reset(token)

    def remembered_thread_memory(self, thread_id: str) -> ThreadMemory | None:
        """``thread_memory`` if it is remembered and fresh, else ``None``: never reads
        the database."""
        return self._memory_cache.remembered(thread_id)

    def rejected_tools(self, thread_id: str) -> frozenset[str]:
        """The tools with a remembered rejection in this thread: the common answer, "none",
        spares the policy hashing the arguments and reading the rejection itself."""
        return self.thread_memory(thread_id).rejected

    @abc.abstractmethod
    def change_token(self) -> object: ...

    def memory_token(self) -> object:
        """When remembered thread memory must be read again; ``change_token`` by default."""
        return self.change_token()

    def accounts_token(self) -> object | None:
        """Changed when another process may have changed an account; ``None`` where the
        store cannot tell (SQLite: remembered tokens are trusted for ``TOKEN_FRESH`` only)."""
        return None

    # How long remembered thread memory may be kept when the token has not changed
    # (``None``: until it changes).
    memory_staleness: float | None = None

    def grants_for(self, *, thread_id: str | None, session_id: str | None,
                   tool: str) -> Sequence[Grant]:
        """The thread's and the session's grants, oldest first (the policy filters by tool)."""
        return merged_grants(self.thread_memory(thread_id) if thread_id else None,
                             self._memory_cache.session(session_id, self._read_session)
                             if session_id else ())

    def thread_mode(self, thread_id: str) -> str | None:
        with self._reader() as tx:
            return tx.thread_mode(thread_id)

    def thread_parties(self, thread_id: str) -> frozenset[str]:
        with self._reader() as tx:
            return tx.thread_parties(thread_id)

    def count_requests(self) -> dict[str, int]:
        """How many requests are in each status (for ``/metrics``)."""
        with self._reader() as tx:
            rows = tx._exec("SELECT status, COUNT(*) FROM requests GROUP BY status", ())
            return {str(row[0]): int(row[1]) for row in rows.fetchall()}

    def count_users(self) -> int:
        with self._reader() as tx:
            return int(tx._exec("SELECT COUNT(*) FROM users", ()).fetchone()[0])

    def pending_on_thread(self, thread_id: str) -> list[ApprovalRequest]:
        return self.list_requests(status=RequestStatus.PENDING, thread_id=thread_id)


def _tapped(events: Iterator[AuditEvent], tap: Callable[[AuditEvent], None]
            ) -> Iterator[AuditEvent]:
    """``events``, each shown to ``tap`` once the walk asks for the next one (it found the
    previous good); the last one is shown when the walk asks past the end."""
    previous = None
    for event in events:
        if previous is not None:
            tap(previous)
        previous = event
        yield event
    if previous is not None:
        tap(previous)
