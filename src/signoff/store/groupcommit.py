"""SQLite's writers of one process, committed together: one fsync for a group of them.

In WAL mode with ``synchronous=FULL`` a commit is an fsync, and SQLite has one writer at
a time. Serial transactions therefore cost at least one fsync each, whatever the CPU
could do: at 32 approvers a server decided ~280/s, against ~400/s for a bare
FastAPI-and-UPDATE floor that commits no more than it must.

So a process's writers share one connection and queue for it in arrival order
(``FifoLock``). Each runs its body inside a ``SAVEPOINT`` of a transaction that may
already hold the writes of the writers before it. When a body finishes and another
writer is waiting, it hands the open transaction on instead of committing, and waits.
The last of the group — nobody waiting, or the group full (``GROUP_MAX`` members, or
open ``GROUP_WINDOW`` seconds) — commits for all and wakes them. So:

- nobody returns before its writes are durable;
- a body that fails rolls back to its own savepoint and leaves the others' writes;
- a commit that fails fails for every member (none has returned yet); if SQLite rolled
  the whole transaction back under a body (a full disk), every member fails with it.

What a body reads through its ``tx`` includes the uncommitted writes of the group's
earlier members: they commit together or not at all. Reads through the store's own
methods (each thread's connection) see committed state only, as before. Writers of
other processes still meet at ``BEGIN IMMEDIATE`` and the busy timeout.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING

from signoff.errors import Conflict, StoreError
from signoff.store.dialect import SQLITE
from signoff.store.faults import CODES, classify, reraise, store_error
from signoff.store.sqltx import SqlTx

if TYPE_CHECKING:
    from signoff.store.sqlite import SqliteStore

GROUP_MAX = 32  # members of one commit at most
GROUP_WINDOW = 0.010  # seconds a group stays open for more members at most
ORPHAN_CHECK = 0.1  # seconds between a waiting member's looks at a group nobody holds


class Group:
    """One open transaction and the members whose writes are in it."""

    __slots__ = ("done", "error", "members", "started")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.members: list[SqlTx] = []
        self.started = time.monotonic()


class Transaction:
    """``with store.transaction() as tx``: a member of the open group, or a new one."""

    __slots__ = ("conn", "group", "store", "tx")

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def __enter__(self) -> SqlTx:
        store = self.store
        store._writer.acquire()
        group = None
        try:
            conn = self.conn = store._writer_connection()
            group = store._group
            if group is None:
                conn.execute("BEGIN IMMEDIATE")
                group = store._group = Group()
            conn.execute("SAVEPOINT member")
        except BaseException as exc:
            if group is None:
                store._writer.release()
            else:
                _leave(store, group)
            if isinstance(exc, sqlite3.Error):
                reraise(exc, "cannot begin a transaction")
            raise
        self.group = group
        self.tx = SqlTx(conn.cursor(), SQLITE, head_hint=store._head)
        return self.tx

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        store, conn, group, tx = self.store, self.conn, self.group, self.tx
        if exc is None:
            try:
                conn.execute("RELEASE member")
            except sqlite3.Error as failed:
                exc = failed
            else:
                group.members.append(tx)
                if tx.head is not None:
                    store._head = tx.head
                _leave(store, group)
                _await(store, group)
                return
        store._head = None  # this body's events are undone: read the head again
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK TO member")
                conn.execute("RELEASE member")
            except sqlite3.Error:
                rollback(conn)
        if not conn.in_transaction and group.members and group.error is None:
            # SQLite rolled back the whole transaction (a full disk, an I/O error): the
            # members before this one lost their writes too.
            group.error = exc if isinstance(exc, sqlite3.Error) else sqlite3.OperationalError(
                "the transaction was rolled back")
        _leave(store, group)
        if isinstance(exc, sqlite3.IntegrityError) and str(exc).startswith(
                ("UNIQUE constraint failed", "PRIMARY KEY must be unique")):
            raise Conflict(f"a concurrent write got there first: {exc}",
                           code="unique_violation") from exc
        if isinstance(exc, sqlite3.Error):
            reraise(exc, "the transaction failed")


def _leave(store: SqliteStore, group: Group) -> None:
    """The holder is done with ``group``: hand it to the next writer waiting, or close it
    (commit for every member, wake them) and let the lock go."""
    if store._writer_connection().in_transaction and group.error is None \
            and len(group.members) < GROUP_MAX \
            and time.monotonic() - group.started < GROUP_WINDOW and store._writer.hand_on():
        return
    _close(store, group)


def _close(store: SqliteStore, group: Group) -> None:
    conn = store._writer_connection()
    store._group = None
    try:
        if conn.in_transaction:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as failed:
                rollback(conn)
                group.error = failed
        elif group.members and group.error is None:
            group.error = sqlite3.OperationalError("the transaction was rolled back")
        if group.error is not None:
            store._head = None
        else:
            for tx in group.members:
                if tx.memory_changed:
                    store._memory_writes += 1
        group.done.set()
    finally:
        store._writer.release()
    if group.error is None and any(tx.notified for tx in group.members):
        store._wake()


def _await(store: SqliteStore, group: Group) -> None:
    """Wait for the group's commit; raise its error if it failed."""
    while not group.done.wait(ORPHAN_CHECK):
        # A writer handed the group can be interrupted before it takes it (a signal in
        # the main thread): the lock is then let go with the group open. Close it here.
        if store._group is group and not store._writer.locked():
            store._writer.acquire()
            if store._group is group:
                _close(store, group)
            else:
                store._writer.release()
    if group.error is not None:
        # A fresh error for each member (one exception object raised in many threads would
        # collect all their tracebacks): the group's commit failed, nothing was written.
        typed = classify(group.error)
        code = typed.code if isinstance(typed, StoreError) and typed.code in CODES \
            else "store_unavailable"
        raise store_error(code, what="the commit failed") from group.error


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back what is still open. SQLite may have rolled back already (a full disk, an
    I/O error): a second ROLLBACK would fail and bury the error that matters."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
