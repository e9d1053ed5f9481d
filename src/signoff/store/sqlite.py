"""``SqliteStore``: the embedded default. stdlib ``sqlite3``, WAL, ``synchronous=FULL``.

Writes run in ``BEGIN IMMEDIATE`` transactions, so the write lock is taken
before anything is read and two writers never interleave; a busy timeout
makes contending processes queue instead of failing. A process's writers share
one connection, in arrival order, and commit in groups: one fsync for all the
transactions that queued meanwhile (``signoff.store.groupcommit``). Each thread
(and each process after a fork) reads on a connection of its own.

Waking waiters: commits in this process notify a condition variable at once;
commits by other processes are seen by polling ``PRAGMA data_version`` — a
counter SQLite bumps when another connection commits, read without touching
any table — every 20 ms while someone waits. Nothing polls when nobody waits.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signoff.errors import ConfigurationError
from signoff.store.backup import backup_sqlite
from signoff.store.capabilities import Capability
from signoff.store.checkpointer import Checkpointer
from signoff.store.dialect import SQLITE
from signoff.store.faults import reraise, store_error
from signoff.store.fifo import FifoLock
from signoff.store.groupcommit import Group, Transaction, rollback
from signoff.store.records import Backup
from signoff.store.schema import MIGRATIONS
from signoff.store.sqlstore import SqlStore
from signoff.store.sqltx import SqlTx

if TYPE_CHECKING:
    from signoff.keys import SigningKey

POLL_INTERVAL = 0.02
MEMORY_STALENESS = 0.05  # seconds another process's rejection may take to be remembered


class _Lease:
    """Held in a thread's local storage; returns the thread's connection to the store's idle
    list when the thread ends (its locals are collected), instead of leaking it."""

    __slots__ = ("conn", "pid", "reader", "store")

    def __init__(self, store: SqliteStore, conn: sqlite3.Connection,
                 reader: contextlib.nullcontext[SqlTx]) -> None:
        self.store = store
        self.conn = conn
        self.reader = reader
        self.pid = os.getpid()

    def __del__(self) -> None:
        store = self.store
        if getattr(store, "_closed", False):
            return
        with store._lock:
            store._idle.append((self.conn, self.reader, self.pid))


def missing(path: str, *, create: bool) -> None:
    """Refuse a database file that is not there (when not creating one) or whose directory
    is not there (SQLite would say only that it cannot open it): ``database_missing``,
    naming the path and what creates it."""
    if path in ("", ":memory:"):  # SQLite's private databases: nothing on disk to miss
        return
    target = Path(path)
    if target.is_dir():
        raise ConfigurationError(f"--db {path} is a directory, not a database file: give "
                                 "the file's path", code="database_missing")
    if target.exists():
        return
    parent = target.parent
    if not parent.is_dir():
        raise ConfigurationError(
            f"no database at {path}: the directory {parent} does not exist (create it "
            f"first, or correct --db / $SIGNOFF_DB)", code="database_missing")
    if not create:
        raise ConfigurationError(
            f"no database at {path}: `signoff db migrate --db {shlex.quote(path)}` (or "
            f"`signoff serve --db {shlex.quote(path)}`) creates one; or correct --db / "
            "$SIGNOFF_DB", code="database_missing")


class SqliteStore(SqlStore):
    backend = "sqlite"
    capabilities = frozenset({Capability.ONLINE_BACKUP})

    def __init__(self, path: str | Path, *, synchronous: str = "FULL", busy_timeout: float = 30.0,
                 migrate: bool = True, create: bool = True) -> None:
        """``create=False`` opens only a database that exists (``database_missing``
        otherwise): a mistyped path must not become a new, empty database."""
        self.path = str(path)
        missing(self.path, create=create)
        if synchronous not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError("synchronous must be FULL, NORMAL or EXTRA")
        self.synchronous = synchronous
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._changed = threading.Condition()
        self._generation = 0
        self._memory_writes = 0  # commits that changed thread memory (under the writer lock)
        self._connections: list[sqlite3.Connection] = []
        self._idle: list[tuple[sqlite3.Connection, contextlib.nullcontext[SqlTx], int]] = []
        self._closed = False
        self._lock = threading.RLock()  # a dying thread's lease may return its connection
        self._writer = FifoLock()  # this process's writers, in the order they came
        # Held with ``_writer``: the writers' connection, the group of transactions open on
        # it, and the audit head its last write left (a hint; signoff.store.groupcommit).
        self._wconn: sqlite3.Connection | None = None
        self._wpid = 0
        self._group: Group | None = None
        self._head: tuple[int, str] | None = None
        self._checkpointer: Checkpointer | None = None  # signs the head (``sign_audit``)
        if migrate:
            try:
                self.migrate()
            except BaseException:
                self.close()  # a store that failed to open leaves no connection behind
                raise

    # ---- connections -------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        reader = None
        with self._lock:
            while self._idle:
                conn, reader, pid = self._idle.pop()
                if pid == os.getpid():
                    break
                conn = None
        if conn is None or reader is None:
            conn = self._open()
            reader = contextlib.nullcontext(SqlTx(conn.cursor(), SQLITE))
            with self._lock:
                self._connections.append(conn)
        self._local.conn = conn
        self._local.pid = os.getpid()
        self._local.reader = reader
        # Threads come and go (LangGraph runs each tool call on a pool thread): when this one
        # ends, its thread-local lease is collected and hands the connection to the next.
        self._local.lease = _Lease(self, conn, reader)
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            with contextlib.suppress(UnboundLocalError, sqlite3.Error):
                conn.close()
            what = f"cannot open SQLite database {self.path}"
            if not _writable(self.path):  # SQLite says only "unable to open database file"
                raise store_error("store_read_only", what=what) from exc
            reraise(exc, what)
        return conn

    def transaction(self) -> Transaction:
        return Transaction(self)

    def _writer_connection(self) -> sqlite3.Connection:
        """The connection this process's writers share (``signoff.store.groupcommit``),
        held by whoever holds ``_writer``."""
        conn = self._wconn
        if conn is None or self._wpid != os.getpid():
            conn = self._open()
            with self._lock:
                self._connections.append(conn)
            self._wconn, self._wpid = conn, os.getpid()
            self._group = None
        return conn

    def _reader(self) -> contextlib.nullcontext[SqlTx]:
        # Reads are autocommit statements on the thread's connection: one reader per
        # connection, made with it, with nothing to do on the way in or out.
        self._connection()
        reader: contextlib.nullcontext[SqlTx] = self._local.reader
        return reader

    def migrate(self) -> int:
        conn = self._connection()
        try:
            self._migrate_step(conn, None, "CREATE TABLE IF NOT EXISTS signoff_migrations "
                               "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                               "applied_at REAL NOT NULL)")
            for version, migration in enumerate(MIGRATIONS, start=1):
                self._migrate_step(conn, version, migration)
        except sqlite3.Error as exc:
            reraise(exc, f"cannot migrate SQLite database {self.path}")
        return len(MIGRATIONS)

    @staticmethod
    def _migrate_step(conn: sqlite3.Connection, version: int | None, step: Any) -> None:
        """One migration (or the bookkeeping table) in its own ``BEGIN IMMEDIATE``."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            if version is None:
                conn.execute(step)
            elif not conn.execute("SELECT 1 FROM signoff_migrations WHERE version = ?",
                                  (version,)).fetchone():
                for statement in step.for_dialect("sqlite"):
                    conn.execute(statement)
                conn.execute("INSERT INTO signoff_migrations VALUES (?, ?, ?)",
                             (version, step.name, time.time()))
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise

    def backup(self, destination: str | Path) -> Backup:
        """A consistent, checked copy while servers write (``signoff.store.backup``)."""
        return backup_sqlite(self.path, destination)

    # ---- waking ------------------------------------------------------------------------------

    def _wake(self) -> None:
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    def memory_token(self) -> object:
        """Changed by every commit of this process that wrote thread memory (a mode, a
        rejection, a grant or a grant's use); other processes' arrive by age instead
        (``memory_staleness``).

        Asking SQLite (``PRAGMA data_version``) releases the GIL, and on a busy agent's pool
        thread getting it back costs far more than the query. A rejection decided or a mode
        set in another process therefore reaches remembered thread memory within 50 ms;
        until then a re-proposed call asks a human again — it is never allowed by the delay
        (``signoff.store.thread_memory``)."""
        return self._memory_writes

    memory_staleness = MEMORY_STALENESS

    def change_token(self) -> object:
        conn = self._connection()
        return (self._generation, conn.execute("PRAGMA data_version").fetchone()[0])

    def wait(self, request_id: str, *, timeout: float, since: object = None) -> None:
        conn = self._connection()
        deadline = time.monotonic() + timeout
        token = since if isinstance(since, tuple) else self.change_token()
        assert isinstance(token, tuple)
        generation: int = token[0]
        version: int = token[1]
        with self._changed:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._generation != generation:
                    return
                self._changed.wait(min(POLL_INTERVAL, remaining))
                if self._generation != generation:
                    return
                if conn.execute("PRAGMA data_version").fetchone()[0] != version:
                    return

    def sign_audit(self, key: SigningKey) -> None:
        """Sign the head with ``key`` once a second while it moves, and at close
        (``signoff.store.checkpointer``)."""
        if self._checkpointer is not None:
            self._checkpointer.stop()
        self._checkpointer = Checkpointer(self, key)
        self._checkpointer.start()

    def close(self) -> None:
        self._run_close_hooks()
        if self._checkpointer is not None:
            self._checkpointer.stop()  # the last head signed, before the connections go
            self._checkpointer = None
        self._closed = True
        with self._lock:
            self._idle.clear()
            for conn in self._connections:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._connections.clear()
        self._local = threading.local()
        self._wconn = None


def _writable(path: str) -> bool:
    """Whether this process may write the database and its directory (WAL and shared-memory
    files live beside it): a read-only file or mount is told apart from a missing one."""
    if path == ":memory:" or path.startswith("file:"):
        return True
    directory = os.path.dirname(os.path.abspath(path))
    return os.access(directory, os.W_OK) and (not os.path.exists(path)
                                               or os.access(path, os.W_OK))

