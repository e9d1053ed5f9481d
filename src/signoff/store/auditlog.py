"""The audit events of one SQL transaction: ``AuditLog``, held by ``SqlTx`` as ``tx.audit``.

On SQLite an event is chained as it is written — its index the head's plus one, its hash
over the previous hash — under the write lock ``BEGIN IMMEDIATE`` already holds; the head
this store last committed is tried first (``head_hint``), and read only when someone else
moved it. On PostgreSQL events go to ``audit_pending`` unchained and are sealed after
commit (``signoff.store.sealer``); those whose number nobody needs are kept and written
together with the next one, or the commit, in one statement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from signoff.audit import AuditKind, canonical_data, chain_hash
from signoff.store.records import Event
from signoff.store.rows import AUDIT_COLUMNS

if TYPE_CHECKING:
    from signoff.store.sqltx import SqlTx

_INSERT_AUDIT = f"INSERT INTO audit ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_PENDING = ("INSERT INTO audit_pending (at_us, kind, request_id, actor, data) "
                   "VALUES (?, ?, ?, ?, ?)")
# Appends only if the head is still (idx, hash), holding the head row while it looks
# (PostgreSQL's FOR UPDATE waits out a concurrent append, then re-checks the head as that
# committed it: a stale guess inserts nothing instead of racing for the index).
_INSERT_AUDIT_IF_HEAD = (f"INSERT INTO audit ({AUDIT_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ? "
                         "FROM audit_head WHERE id = 1 AND idx = ? AND hash = ?")


class AuditLog:
    """What one transaction appends to the audit, and the head it leaves (SQLite)."""

    def __init__(self, tx: SqlTx, head_hint: tuple[int, str] | None) -> None:
        self._tx = tx
        # The audit head as this store last committed it (a hint, checked when used).
        self.head_hint = head_hint
        self.appended = False  # wrote audit events (the sealer is poked after commit)
        self._head: tuple[int, str] | None = None
        self._later: list[tuple[int, str, str | None, str | None, str]] = []  # ``record``

    def append(self, kind: AuditKind, *, at_us: int, request_id: str | None,
                     actor: str | None, data: Mapping[str, Any]) -> int:
        """Append one event; returns its number — unique, and increasing among the
        transactions that one row lock orders (a fencing token): on SQLite the event's
        index in the chain, on PostgreSQL its sequence number in ``audit_pending`` (its
        index is given when it is sealed, after commit)."""
        text = canonical_data(data)
        self.appended = True
        if self._tx.dialect.seals_later:
            self.flush()  # the events recorded before this one come first
            row = self._tx._one(_INSERT_PENDING + " RETURNING seq",
                            (at_us, kind, request_id, actor, text))
            return int(row[0])
        hint = self.head_hint if self._head is None else None
        if hint is not None:
            # The head as this store last committed it, if it is still the head: the insert
            # checks that itself, holding the head (SQLite: BEGIN IMMEDIATE already holds
            # the database; PostgreSQL: FOR UPDATE), which saves reading the head first.
            index, prev = hint[0] + 1, hint[1]
            digest = chain_hash(prev, index=index, at_us=at_us, kind=kind,
                                request_id=request_id, actor=actor, data=text)
            cursor = self._tx._exec(_INSERT_AUDIT_IF_HEAD + self._tx.dialect.lock_suffix, (
                index, at_us, kind, request_id, actor, text, prev, digest, *hint))
            if cursor.rowcount != 1:
                hint = None  # someone else appended since: read the head
        if hint is None:
            if self._head is None:  # read (and lock) once per transaction, then follow it
                row = self._tx._one(f"SELECT idx, hash FROM audit_head WHERE id = 1"
                                f"{self._tx.dialect.lock_suffix}")
                self._head = (int(row[0]), str(row[1]))
            index = self._head[0] + 1
            prev = self._head[1]
            digest = chain_hash(prev, index=index, at_us=at_us, kind=kind,
                                request_id=request_id, actor=actor, data=text)
            self._tx._exec(_INSERT_AUDIT, (index, at_us, kind, request_id, actor, text, prev,
                                       digest))
        self._head = (index, digest)
        return index

    def record(self, kind: AuditKind, *, at_us: int, request_id: str | None,
                     actor: str | None, data: Mapping[str, Any]) -> None:
        """Append one event whose number nobody needs. PostgreSQL keeps it until the next
        append or the commit and writes those together, in order, in one statement: a round
        trip less for each event after the first (a decision records two). SQLite chains it
        at once, as ``append``."""
        if not self._tx.dialect.seals_later:
            self.append(kind, at_us=at_us, request_id=request_id, actor=actor, data=data)
            return
        self.appended = True
        self._later.append((at_us, kind, request_id, actor, canonical_data(data)))

    def flush(self) -> None:
        """Write the events ``record`` kept (before the transaction's next event, and its
        commit)."""
        if self._later:
            rows, self._later = self._later, []
            marks = ", ".join(["(?, ?, ?, ?, ?)"] * len(rows))
            self._tx._defer("INSERT INTO audit_pending (at_us, kind, request_id, actor, data) "
                           f"VALUES {marks}", [value for row in rows for value in row])

    def append_many(self, events: Sequence[Event]
                      ) -> None:
        """Append many events without a request, ``(kind, at_us, actor, data)`` each, in
        order: the head read once, the chain computed here, one ``executemany`` (what the
        verdict log flushes every 50 ms; ``append`` one by one cost a statement's
        overhead per event)."""
        if not events:
            return
        self.appended = True
        if self._tx.dialect.seals_later:
            self.flush()
            self._tx.cursor.executemany(self._tx.dialect.sql(_INSERT_PENDING), [
                (at_us, kind, None, actor, canonical_data(data))
                for kind, at_us, actor, data in events])
            return
        if self._head is None:
            row = self._tx._one(f"SELECT idx, hash FROM audit_head WHERE id = 1"
                            f"{self._tx.dialect.lock_suffix}")
            self._head = (int(row[0]), str(row[1]))
        index, prev = self._head
        rows = []
        for kind, at_us, actor, data in events:
            index += 1
            text = canonical_data(data)
            digest = chain_hash(prev, index=index, at_us=at_us, kind=kind, request_id=None,
                                actor=actor, data=text)
            rows.append((index, at_us, kind, None, actor, text, prev, digest))
            prev = digest
        self._tx.cursor.executemany(self._tx.dialect.sql(_INSERT_AUDIT), rows)
        self._head = (index, prev)

    @property
    def head(self) -> tuple[int, str] | None:
        """The audit head after this transaction's events (``None``: it never looked)."""
        return self._head
