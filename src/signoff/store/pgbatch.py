"""A PostgreSQL transaction sent in as few round trips as it can go.

Every statement sent to PostgreSQL is a round trip, and a round trip can cost far
more than the statement: on a quiet virtual machine whose cores sleep between
packets, ``SELECT 1`` takes 0.35 ms where it takes 0.05 ms on a busy one (see
bench/README.md, "Round trips"). So a transaction here keeps back what nobody waits
for — its ``BEGIN``, the rows it inserts, its audit events, a compare-and-set on a row
it holds — and sends them, in order, in front of the next statement whose answer it
needs, or in front of ``COMMIT``: one simple-query message, one round trip. A decision
(lock and read, then write and commit) is two round trips, not seven.

The statements travel as text, their values bound by psycopg on this side
(``ClientCursor``: quoted by libpq for the connection's encoding), on an autocommit
connection whose transaction this class opens and ends itself. A statement kept back
that fails makes the message it travels in fail: PostgreSQL runs nothing after it, the
transaction is aborted and rolled back, and the error reaches the caller from the
statement it was sending (or from the commit) — with nothing written, as any failed
transaction. A kept-back statement whose effect must hold (a compare-and-set on a held
row) is written so that PostgreSQL itself raises when it does not (``guarded``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

# Raised by the ``signoff_expect_one`` function of schema migration 17 when a kept-back
# compare-and-set matched no row: the whole transaction rolls back.
GUARD_STATE = "SO409"


def guarded(statement: str, what: str) -> tuple[str, str]:
    """``statement`` (an UPDATE that must change exactly one row, ``RETURNING`` nothing) as
    one that raises ``GUARD_STATE`` inside PostgreSQL when it changes none — so it may be
    kept back and sent with the commit. Returns the statement and its last parameter
    (``what``: the message), to append to its parameters."""
    return (f"WITH moved AS ({statement} RETURNING 1) "
            "SELECT signoff_expect_one(COUNT(*), %s) FROM moved"), what


class Batch:
    """One transaction on an autocommit connection (the DB-API subset ``SqlTx`` uses)."""

    __slots__ = ("_params", "_texts", "conn", "cursor", "ended", "sent")

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.cursor: psycopg.ClientCursor[Any] = psycopg.ClientCursor(conn)
        self._texts: list[str] = ["BEGIN"]
        self._params: list[Any] = []
        self.sent = False  # BEGIN has gone: the server holds a transaction for us
        self.ended = False

    @property
    def connection(self) -> psycopg.Connection[Any]:
        return self.conn

    def defer(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Keep ``statement`` for the next round trip (its result is never read)."""
        self._open()
        self._texts.append(statement)
        self._params.extend(params)

    def execute(self, statement: str, params: Sequence[Any] = (), *,
                commit: bool = False) -> psycopg.ClientCursor[Any]:
        """Send what was kept and ``statement``; the cursor, on ``statement``'s result.
        ``commit``: ``statement`` is the transaction's last, and ``COMMIT`` goes with it
        (nothing may follow it)."""
        self._open()
        self._texts.append(statement)
        self._params.extend(params)
        if commit:
            self._texts.append("COMMIT")
            self.ended = True
        self._send(skip_last=commit)
        return self.cursor

    def executemany(self, statement: str, seq: Sequence[Sequence[Any]]) -> None:
        """``statement`` once per row of ``seq``, kept for the next round trip."""
        for params in seq:
            self.defer(statement, params)

    def fetchone(self) -> Any:
        return self.cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self.cursor.fetchall()

    @property
    def rowcount(self) -> int:
        return self.cursor.rowcount

    def commit(self) -> None:
        """Send what was kept, and ``COMMIT``; a transaction that never wrote nor read
        costs no round trip at all, and one committed with its last statement none more."""
        if self.ended and not self._texts and self.sent:
            return  # committed with its last statement (``execute(..., commit=True)``)
        self._open()
        self.ended = True
        if not self.sent and len(self._texts) == 1:  # only BEGIN: nothing to do
            self._texts.clear()
            return
        self._texts.append("COMMIT")
        self._send()

    def rollback(self) -> None:
        """End the transaction without its writes (what was kept is dropped unsent)."""
        self.ended = True
        self._texts.clear()
        self._params.clear()
        if self.sent and self.conn.info.transaction_status is not TransactionStatus.IDLE:
            self.conn.execute("ROLLBACK")

    def _open(self) -> None:
        if self.ended:
            raise RuntimeError("this transaction has ended")

    def _send(self, *, skip_last: bool = False) -> None:
        texts, params = self._texts, self._params
        self._texts, self._params = [], []
        self.sent = True  # from here on, an error leaves a transaction to roll back
        self.cursor.execute("; ".join(texts), params)
        for _ in range(len(texts) - 1 - skip_last):  # to the last statement's result
            self.cursor.nextset()
