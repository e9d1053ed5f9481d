"""A PostgreSQL transaction sent in as few round trips as it can go.

Every statement sent to PostgreSQL is a round trip, and a round trip can cost far
more than the statement: on a quiet virtual machine whose cores sleep between
packets, ``SELECT 1`` takes 0.35 ms where it takes 0.05 ms on a busy one (see
bench/README.md, "Round trips"). So a transaction here keeps back what nobody waits
for — its ``BEGIN``, the rows it inserts, its audit events, a compare-and-set on a row
it holds — and sends them, in order, in front of the next statement whose answer it
needs, or in front of ``COMMIT``: one pipeline with one synchronisation point, one
round trip. A decision (lock and read, then write and commit) is two round trips, not
seven.

The statements go in libpq's pipeline mode, each with its parameters bound on the
server (the extended protocol), on an autocommit connection whose transaction this
class opens and ends itself. So psycopg prepares the ones a connection sends often,
and PostgreSQL plans them once rather than at every transaction (text batched in one
simple-query message would be parsed and planned each time: on this machine that
cost PostgreSQL about 0.9 ms of CPU per approval cycle). A statement kept back that fails
stops the ones after it until the synchronisation point: the transaction is aborted
and rolled back, and the error reaches the caller from the statement it was sending
(or from the commit) — with nothing written, as any failed transaction. A kept-back
statement whose effect must hold (a compare-and-set on a held row) is written so that
PostgreSQL itself raises when it does not (``guarded``). At the commit, writes that cannot
see each other go as one statement (``folded``), and a transaction that is that one
statement alone needs no ``BEGIN`` or ``COMMIT``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

# Raised by the ``signoff_expect_one`` function of schema migration 17 when a kept-back
# compare-and-set matched no row: the whole transaction rolls back.
GUARD_STATE = "SO409"


_GUARD_HEAD = "WITH moved AS ("
_GUARD_TAIL = " RETURNING 1) SELECT signoff_expect_one(COUNT(*), %s) FROM moved"


def guarded(statement: str, what: str) -> tuple[str, str]:
    """``statement`` (an UPDATE that must change exactly one row, ``RETURNING`` nothing) as
    one that raises ``GUARD_STATE`` inside PostgreSQL when it changes none — so it may be
    kept back and sent with the commit. Returns the statement and its last parameter
    (``what``: the message), to append to its parameters."""
    return f"{_GUARD_HEAD}{statement}{_GUARD_TAIL}", what


Kept = tuple[str, Sequence[Any]]


def folded(writes: Sequence[Kept]) -> Kept | None:
    """``writes`` as one statement, or ``None`` when they cannot safely be one.

    Each write is a plain ``INSERT``, or one check: a ``guarded`` compare-and-set or a
    ``SELECT signoff_expect_one(…)`` condition. Each goes in a ``WITH`` of one statement
    (the check is its main query), whose snapshot they share and whose effects they
    cannot see of each other. So they are folded only when that changes nothing: every
    write has a table of its own, and no statement names a table another writes (a
    subquery, a foreign read). Foreign keys are checked at the end of the statement, as
    at the end of each before; no trigger here reads another table. The check's answer
    is the statement's: when it raises, nothing of the statement stays. PostgreSQL then
    parses, plans and runs one statement instead of several, and the client sends one."""
    if len(writes) <= 1:
        return writes[0] if writes else None
    plan = _fold(tuple(text for text, _ in writes))
    if plan is None:
        return None
    text, order, guard = plan
    params: list[Any] = []
    for index in order:
        values = writes[index][1]
        params.extend(values[:-1] if index == guard else values)
    if guard is not None:  # the guard's message goes last, with the answer it gives
        params.append(writes[guard][1][-1])
    return text, params


_CHECK_HEAD = "SELECT signoff_expect_one("


@functools.lru_cache(maxsize=256)
def _fold(texts: tuple[str, ...]) -> tuple[str, tuple[int, ...], int | None] | None:
    """The folded text of ``texts``, the order their parameters go in, and the index of a
    guarded compare-and-set (its last parameter, the message, goes at the very end);
    ``None`` when they do not fold (``folded``'s rules). Worked out once per shape."""
    parts: list[tuple[int, str, str]] = []  # (index, table written, CTE)
    guard: int | None = None
    check: int | None = None
    for index, text in enumerate(texts):
        if text.startswith(_GUARD_HEAD) and text.endswith(_GUARD_TAIL) and guard is None:
            body = text[len(_GUARD_HEAD):-len(_GUARD_TAIL)]
            words = body.split(None, 2)
            if len(words) < 2 or words[0] != "UPDATE":
                return None
            parts.append((index, words[1], f"moved AS ({body} RETURNING 1)"))
            guard = index
        elif text.startswith(_CHECK_HEAD) and check is None:
            check = index
        elif text.startswith("INSERT INTO ") and " RETURNING " not in text:
            parts.append((index, text.split(None, 3)[2], f"w{index} AS ({text})"))
        else:
            return None
    if guard is not None and check is not None:
        return None
    tables = [table for _, table, _ in parts]
    if len(set(tables)) != len(tables):
        return None
    bodies = [(index, texts[index]) for index, _, _ in parts]
    if check is not None:
        bodies.append((check, texts[check]))
    for index, body in bodies:
        if any(other_index != index and re.search(rf"\b{re.escape(table)}\b", body)
               for other_index, table, _ in parts):
            return None
    ctes = ", ".join(cte for _, _, cte in parts)
    order = tuple(index for index, _, _ in parts)
    if guard is not None:  # the guard's answer is the statement's: it must run, and raise
        return (f"WITH {ctes} SELECT signoff_expect_one(COUNT(*), %s) FROM moved", order,
                guard)
    if check is not None:
        return f"WITH {ctes} {texts[check]}", (*order, check), None
    *before, last = parts
    return (f"WITH {', '.join(cte for _, _, cte in before)} {texts[last[0]]}", order,
            None)


def pipelined(conn: psycopg.Connection[Any],
              steps: Sequence[tuple[psycopg.Cursor[Any], str, Sequence[Any]]]) -> None:
    """Send each ``(cursor, statement, params)`` in one pipeline: one synchronisation point,
    one round trip; each cursor then holds its statement's result. A statement that fails
    stops the ones after it, and its own error is raised (not the skipped ones')."""
    failed: psycopg.Error | None = None
    try:
        with conn.pipeline():
            try:
                for cursor, statement, params in steps:
                    cursor.execute(statement, params)
            except psycopg.Error as exc:  # an answer already back says a statement failed
                failed = exc  # the pipeline still ends at its synchronisation point
    except psycopg.errors.PipelineAborted:  # the statements after it, skipped
        if failed is None:
            raise
    if failed is not None:
        raise failed


_BEGIN: Kept = ("BEGIN", ())


class Batch:
    """One transaction on an autocommit connection (the DB-API subset ``SqlTx`` uses)."""

    __slots__ = ("_kept", "_piped", "_sink", "conn", "cursor", "ended", "sent")

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.cursor: psycopg.Cursor[Any] = conn.cursor()
        self._sink: psycopg.Cursor[Any] = conn.cursor()
        self._kept: list[Kept] = [_BEGIN]
        self.sent = False
        self.ended = False
        self._piped = False  # a pipeline of this transaction failed (see ``rollback``)

    @property
    def connection(self) -> psycopg.Connection[Any]:
        return self.conn

    def defer(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Keep ``statement`` for the next round trip (its result is never read)."""
        self._open()
        self._kept.append((statement, params))

    def execute(self, statement: str, params: Sequence[Any] = (), *,
                commit: bool = False) -> psycopg.Cursor[Any]:
        """Send what was kept and ``statement``; the cursor, on ``statement``'s result.
        ``commit``: ``statement`` is the transaction's last, and ``COMMIT`` goes with it
        (nothing may follow it)."""
        self._open()
        kept, self._kept = self._kept, []
        self.sent = True
        if commit:
            self.ended = True
            if kept == [_BEGIN]:  # the whole transaction: PostgreSQL's implicit one will do
                self.cursor.execute(statement, params)
                return self.cursor
        if not kept and not commit:  # nothing kept: a plain statement
            self.cursor.execute(statement, params)
            return self.cursor
        # One Sync for them all: the server answers once, after the last (``_sink``'s
        # results are never read; an error in any stops the rest and is raised here).
        self._pipeline([*kept, (statement, params)], answered=len(kept),
                       then=("COMMIT",) if commit else ())
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
        if self.ended and not self._kept and self.sent:
            return  # committed with its last statement (``execute(..., commit=True)``)
        self._open()
        self.ended = True
        if not self.sent and len(self._kept) == 1:  # only BEGIN: nothing to do
            self._kept.clear()
            return
        kept, self._kept = self._kept, []
        one = folded(kept[1:] if kept[:1] == [_BEGIN] else kept)
        if one is not None and kept[:1] == [_BEGIN]:
            # Nothing sent yet, and the writes fold into one statement: it is the whole
            # transaction, in PostgreSQL's implicit one — no BEGIN, no COMMIT.
            self.sent = True
            self._sink.execute(*one)
            return
        if one is not None:
            kept = [one]
        kept.append(("COMMIT", ()))
        self.sent = True
        if len(kept) == 1:
            self._sink.execute("COMMIT")
            return
        self._pipeline(kept)

    def rollback(self) -> None:
        """End the transaction without its writes (what was kept is dropped unsent)."""
        self.ended = True
        self._kept.clear()
        if not self.sent or self.conn.info.transaction_status is TransactionStatus.IDLE:
            return
        if self._piped:
            # The statements after the one that failed were skipped, a statement psycopg
            # was preparing among them: its cache would name a statement the server never
            # saw. ``Connection.rollback`` forgets them all (and deallocates them), as
            # psycopg does after any rollback of its own.
            self.conn.rollback()
        else:
            self.conn.execute("ROLLBACK")

    def _pipeline(self, statements: Sequence[tuple[str, Sequence[Any]]], *,
                  answered: int = -1, then: Sequence[str] = ()) -> None:
        """Send ``statements`` (the one at ``answered`` on ``cursor``, whose result is read)
        and ``then`` in one pipeline: one synchronisation point, one round trip."""
        steps = [(self.cursor if index == answered else self._sink, text, values)
                 for index, (text, values) in enumerate(statements)]
        try:
            pipelined(self.conn, [*steps, *((self._sink, text, ()) for text in then)])
        except BaseException:
            self._piped = True
            raise

    def _open(self) -> None:
        if self.ended:
            raise RuntimeError("this transaction has ended")
