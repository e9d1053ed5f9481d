"""``PostgresStore``: for more than one process or machine. psycopg 3 with a connection pool.

* Transactions lock the request row they decide on (``SELECT … FOR UPDATE``),
  so decisions on one request serialise; executors pick approved work with
  ``SKIP LOCKED``. Audit events are appended to ``audit_pending`` and chained
  after commit by the sealer (``signoff.store.sealer``): no transaction waits
  on another's audit.
* The schema is created by an explicit ``setup()`` (``signoff db migrate``),
  serialised across processes by an advisory lock; each migration commits
  with its row in ``signoff_migrations``.
* Waking: every sealed request event sends ``NOTIFY signoff_requests,
  '<id>'`` (once per request and seal) and every write to thread memory
  ``':memory'``, from triggers in the database (delivered on commit); one
  listener thread per store wakes the local waiters, so a decision taken on
  one machine wakes the agent waiting on another. Outside the ``public`` schema the channel is
  ``signoff_requests_<hash of the schema>``, so stores in different schemas do
  not wake each other.
* ``schema=`` puts every table in a named schema (tests use one per run).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from signoff.errors import Conflict, StoreError
from signoff.keys import SigningKey
from signoff.store.capabilities import Capability
from signoff.store.dialect import POSTGRES
from signoff.store.faults import classify, reraise
from signoff.store.outage import Outage
from signoff.store.pgbatch import Batch
from signoff.store.records import Event
from signoff.store.schema import MIGRATIONS
from signoff.store.sealer import Sealer, lock_key, pending
from signoff.store.sqlstore import SqlStore
from signoff.store.sqltx import SqlTx

CHANNEL = "signoff_requests"
POOL_TIMEOUT = 5.0  # seconds to wait for a connection before answering store_busy
PROBE_TIMEOUT = 2  # seconds a direct connection may take (libpq's least) to tell an outage
# A pool's own reconnection attempts give up after this long (its default, 5 minutes of
# growing pauses, could leave it idle for a minute after the database is back); the next
# request that needs a connection starts a fresh attempt.
RECONNECT_TIMEOUT = 2.0
_MIGRATION_LOCK = 0x5160FF  # pg_advisory_xact_lock key for setup()
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
WAIT_SLICE = 1.0  # re-read at least this often even if a notification were lost


def _probe(dsn: str, schema: str | None, timeout: float) -> None:
    """One connection before the pools: a database that is unreachable fails here at once,
    and one that keeps refusing connections (its limit reached) within ``timeout`` — with
    one typed error, not the pool workers' warnings. A limit reached for a moment (other
    processes starting too) is waited out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(dsn, autocommit=True,
                                 connect_timeout=max(2, int(timeout))) as conn:
                if schema is not None:
                    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                        sql.Identifier(schema)))
            return
        except psycopg.OperationalError as exc:
            typed = classify(exc)
            busy = typed is not None and typed.code == "store_busy"
            if not busy or time.monotonic() + 0.25 > deadline:
                raise
            time.sleep(0.25)


def channel_for(schema: str | None) -> str:
    """The NOTIFY channel of one schema: stores in other schemas never wake each other.
    The triggers of schema migration 4 compute the same name in SQL."""
    if schema is None or schema == "public":
        return CHANNEL
    return f"{CHANNEL}_{hashlib.sha256(schema.encode()).hexdigest()[:16]}"


_TABLES_SCHEMA = ("SELECT COALESCE((SELECT n.nspname FROM pg_class c JOIN pg_namespace n "
                  "ON n.oid = c.relnamespace WHERE c.oid = to_regclass('audit')), "
                  "current_schema())")
MEMORY_NOTICE = ":memory"  # a notification payload no request id can be
ACCOUNTS_NOTICE = ":accounts"  # a write to ``users`` (schema: "account changes heard …")
CLOSING_NOTICE = ":closing"  # a store closing wakes its own listener; the others ignore it


def redacted(dsn: str) -> str:
    """``dsn`` fit to print: a password in it is replaced by ``***``."""
    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", dsn)


_LIBPQ_HINTS = ("Is the server running", "Multiple connection attempts failed")


def reason(exc: BaseException) -> str:
    """The driver's reason in one line (``Connection refused``, ``the database system is
    shutting down``): not libpq's hints, tabs and "connection to server at … failed"."""
    lines = [line.strip() for line in str(exc).splitlines()]
    lines = [line for line in lines if line and not line.startswith(_LIBPQ_HINTS)]
    if not lines:
        return type(exc).__name__
    text = lines[0].rsplit(" failed: ", 1)[-1]
    return re.sub(r"^(FATAL|ERROR):\s+", "", text).strip() or type(exc).__name__


def connect_error(dsn: str, exc: psycopg.Error) -> StoreError:
    """Why PostgreSQL refused a first connection, said plainly for whoever started us (the
    driver's reason included: this reaches an operator's terminal, not an HTTP body),
    with the code ``faults.classify`` gives it."""
    text = reason(exc)
    found = re.search(r'database "([^"]+)" does not exist', str(exc))
    if found:
        name = found.group(1)
        return StoreError(f"PostgreSQL database {name!r} does not exist: create it "
                          f"(`createdb {name}` or CREATE DATABASE {name}), then run "
                          f"`signoff db migrate --db '{redacted(dsn)}'`",
                          code="database_missing")
    typed = classify(exc)
    code = typed.code if isinstance(typed, StoreError) else "store_unavailable"
    hint = ("; retry later, or raise its connection limit" if code == "store_busy" else
            "; is it running, and are the host and port right?"
            if "refused" in text or "timeout" in text else "")
    error = StoreError(f"cannot connect to PostgreSQL at {redacted(dsn)}: {text}{hint}",
                       code=code)
    error.__cause__ = exc
    return error



def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The schema version a database is at: 0 before the first migration."""
    try:
        row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM signoff_migrations"
                           ).fetchone()
    except psycopg.errors.UndefinedTable:
        return 0
    return int(row[0]) if row else 0

def quiet_pool_warnings() -> None:
    """The pool's own warnings (each failed reconnection, each broken connection dropped)
    say again, many times, what ``Outage`` says once; kept only if the application set the
    pool's log level itself."""
    pool_log = logging.getLogger("psycopg.pool")
    if pool_log.level == logging.NOTSET:
        pool_log.setLevel(logging.ERROR)


class PostgresStore(SqlStore):
    backend = "postgres"
    capabilities = frozenset({Capability.SEALS_AFTER_COMMIT, Capability.GUARDS_UNREAD,
                              Capability.HEARS_OTHER_PROCESSES})
    guards_unread = True

    def __init__(self, dsn: str, *, schema: str | None = None, min_size: int = 1,
                 max_size: int = 8, setup: bool = False, timeout: float = POOL_TIMEOUT) -> None:
        if schema is not None and not _SCHEMA.fullmatch(schema):
            raise ValueError("schema must be a lowercase SQL identifier")
        self.dsn = dsn
        self.schema = schema
        self.channel = channel_for(schema)
        # Autocommit: a write transaction opens and ends itself (signoff.store.pgbatch), its
        # BEGIN sent with its first statement; the sealer's and setup's use conn.transaction().
        kwargs: dict[str, Any] = {"autocommit": True}
        if schema is not None:
            kwargs["options"] = f"-c search_path={schema}"
        self._kwargs = kwargs
        # One direct connection first: a pool retries a database that does not exist for
        # its whole timeout (30 s) and then names no cause; this says why at once.
        try:
            _probe(dsn, schema, timeout)
        except psycopg.Error as exc:
            raise connect_error(dsn, exc) from None
        quiet_pool_warnings()
        self.outage = Outage(f"PostgreSQL at {redacted(dsn)}", self._answers, self._refresh)
        try:
            self.pool = ConnectionPool(dsn, min_size=min_size, max_size=max_size,
                                       kwargs=kwargs, open=True, timeout=timeout,
                                       reconnect_timeout=RECONNECT_TIMEOUT)
        except psycopg.Error as exc:
            reraise(exc, "cannot connect to PostgreSQL")
        try:
            # Reads are single statements: in autocommit they cost one round trip each,
            # not three (BEGIN, SELECT, COMMIT).
            self.read_pool = ConnectionPool(dsn, min_size=min(min_size, 1), max_size=max_size,
                                            kwargs=kwargs, open=True, timeout=timeout,
                                            reconnect_timeout=RECONNECT_TIMEOUT)
        except psycopg.Error as exc:
            self.pool.close()  # not left to the garbage collector (its workers would join)
            reraise(exc, "cannot connect to PostgreSQL")
        self._changed = threading.Condition()
        self._generation = 0
        self._memory_writes = 0  # commits of this process that changed thread memory
        self._memory_notices = 0  # other processes' (and our own) notices of such commits
        self._memory_lock = threading.Lock()
        self._accounts_heard = 0  # notices of writes to ``users``, and (re)connections
        self._listening = False  # the listener is connected and LISTENs (``accounts_token``)
        # Chains committed events into the audit after commit (signoff.store.sealer).
        self.sealer = Sealer(lambda: self._connection(self.pool), lock_key(schema or "public"))
        self._schema_current = False  # checked on first use (``_check_schema``)
        self._listener: threading.Thread | None = None
        self._closing = threading.Event()
        if setup:
            try:
                self.setup()
            except BaseException:
                self.close()  # a store that failed to open leaves no pool behind
                raise

    # ---- connections ---------------------------------------------------------------------------

    @contextmanager
    def _connection(self, pool: ConnectionPool[Any]) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, through what the store knows of an outage (``Outage``): a
        failure that a direct connection confirms becomes the outage's error, at once."""
        self.outage.check()
        try:
            with pool.connection() as conn:
                yield conn
        except Exception as exc:
            typed = classify(exc)
            if (isinstance(typed, StoreError) and not typed.reported
                    and typed.code in ("store_unavailable", "store_busy")
                    and not self._closing.is_set()):
                if self.outage.confirm():
                    raise self.outage.error() from exc
                if typed.code == "store_unavailable":  # a connection broke, the database
                    self._refresh()                     # answers (it restarted): drop the rest
            raise

    def _answers(self) -> str | None:
        """A direct connection: ``None`` when the database answers (a full one, refusing
        for its connection limit, answers), else why not, in a line."""
        try:
            with psycopg.connect(self.dsn, autocommit=True, connect_timeout=PROBE_TIMEOUT,
                                 **{k: v for k, v in self._kwargs.items()
                                    if k != "autocommit"}) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            typed = classify(exc)
            return None if typed is not None and typed.code == "store_busy" else reason(exc)
        return None

    def _refresh(self) -> None:
        """After an outage: drop the pooled connections it broke (they would fail once
        more each), and let the pools grow again at once."""
        for pool in (self.pool, self.read_pool):
            with contextlib.suppress(Exception):
                pool.check()

    # ---- transactions ----------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[SqlTx]:
        if not self._schema_current:
            self._check_schema()
        try:
            with self._connection(self.pool) as conn:
                # Wake-ups are sent by triggers (schema migration 4), delivered on commit.
                batch = Batch(conn)
                tx = SqlTx(batch, POSTGRES)
                try:
                    yield tx
                    tx.commit()  # what was kept back, the audit events record_audit kept, COMMIT
                except BaseException:
                    with contextlib.suppress(psycopg.Error):
                        batch.rollback()  # a broken connection: the pool discards it
                    raise
            if tx.appended:
                self.sealer.poke()
            if tx.memory_changed:
                with self._memory_lock:
                    self._memory_writes += 1
        except psycopg.errors.UniqueViolation as exc:
            raise Conflict(f"a concurrent write got there first: {exc.diag.message_primary}",
                           code="unique_violation") from exc
        except psycopg.Error as exc:  # no connection in time, a failed commit, …
            reraise(exc, "PostgreSQL")

    def finish_execution(self, request_id: str, fencing_token: int, *, event: Event,
                         **changes: Any) -> bool:
        """One statement in autocommit: the move and its event, committed in one round trip
        (``SqlTx.finish_execution``)."""
        if not self._schema_current:
            self._check_schema()
        try:
            with self._connection(self.pool) as conn:
                done = SqlTx(conn.cursor(), POSTGRES).finish_execution(
                    request_id, fencing_token, event=event, **changes)
        except psycopg.Error as exc:
            reraise(exc, "PostgreSQL")
        if done:
            self.sealer.poke()
        return done

    @contextmanager
    def _reader(self) -> Iterator[SqlTx]:
        if not self._schema_current:
            self._check_schema()
        try:
            with self._connection(self.read_pool) as conn:
                yield SqlTx(conn.cursor(), POSTGRES)
        except psycopg.Error as exc:  # statements are typed by SqlTx; this is the pool's
            reraise(exc, "PostgreSQL")

    def _check_schema(self) -> None:
        """Refuse a database whose schema is behind this code (once per store): running on
        it would half-work — no audit head trigger, no wake-ups — instead of failing. A
        newer schema is accepted, so processes can be upgraded one at a time."""
        try:
            with self._connection(self.read_pool) as conn:
                version = schema_version(conn)
        except psycopg.Error as exc:
            reraise(exc, "PostgreSQL")
        if version < len(MIGRATIONS):
            where = f" (schema {self.schema})" if self.schema else ""
            raise StoreError(
                f"the database{where} is at schema version {version}; this signoff needs "
                f"{len(MIGRATIONS)}: run `signoff db migrate --db '{redacted(self.dsn)}'`",
                code="schema_outdated")
        self._schema_current = True

    def setup(self) -> int:
        """Create or upgrade the schema; safe to run from several processes at once."""
        try:
            return self._setup()
        except psycopg.Error as exc:
            reraise(exc, "cannot migrate PostgreSQL")

    def _setup(self) -> int:
        with self.pool.connection() as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                conn.execute("CREATE TABLE IF NOT EXISTS signoff_migrations (version INTEGER "
                             "PRIMARY KEY, name TEXT NOT NULL, applied_at DOUBLE PRECISION "
                             "NOT NULL)")
            for version, migration in enumerate(MIGRATIONS, start=1):
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                    done = conn.execute("SELECT 1 FROM signoff_migrations WHERE version = %s",
                                        (version,)).fetchone()
                    if done:
                        continue
                    for statement in migration.for_dialect("postgres"):
                        conn.execute(statement.encode())
                    conn.execute("INSERT INTO signoff_migrations VALUES (%s, %s, %s)",
                                 (version, migration.name, time.time()))
        self._schema_current = True
        return len(MIGRATIONS)

    migrate = setup

    # ---- waking ----------------------------------------------------------------------------------

    def _listen(self) -> None:
        while not self._closing.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True, **{
                        k: v for k, v in self._kwargs.items() if k != "autocommit"}) as conn:
                    if self.schema is None:  # the schema the search path puts the tables in
                        row = conn.execute(_TABLES_SCHEMA).fetchone()
                        self.channel = channel_for(row[0] if row else None)
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self.outage.alive()
                    # Anything missed while (re)connecting: read again.
                    self._accounts_heard += 1
                    self._listening = True
                    self._wake(memory=True)
                    while not self._closing.is_set():
                        for notice in conn.notifies(timeout=0.5, stop_after=64):
                            if self._closing.is_set():
                                break
                            if notice.payload == CLOSING_NOTICE:
                                continue
                            if notice.payload == ACCOUNTS_NOTICE:
                                self._accounts_heard += 1
                            else:
                                self._wake(memory=notice.payload == MEMORY_NOTICE)
            except psycopg.Error:  # lost or refused: connect again, after a pause
                if not self._closing.is_set() and not self.outage.down:
                    self.outage.confirm()  # an outage is told even while nobody asks
            finally:
                self._listening = False
            self._closing.wait(0.5)

    def _ensure_listener(self) -> None:
        if self._listener is None or not self._listener.is_alive():
            self._listener = threading.Thread(target=self._listen, name="signoff-listen",
                                              daemon=True)
            self._listener.start()

    def _wake(self, *, memory: bool = False) -> None:
        with self._changed:
            self._generation += 1
            if memory:
                self._memory_notices += 1
            self._changed.notify_all()

    def change_token(self) -> object:
        self._ensure_listener()
        return self._generation

    def memory_token(self) -> object:
        """This process's commits that changed thread memory at once; other processes' as
        their notice arrives (a trigger on the mode, rejection and grant tables sends
        ``MEMORY_NOTICE`` with every commit that writes one; other notifications — every
        request event — leave what is remembered alone)."""
        self._ensure_listener()
        return (self._memory_writes, self._memory_notices)

    def accounts_token(self) -> object | None:
        """Changed by every write to ``users`` that commits, in any process (a trigger sends
        ``ACCOUNTS_NOTICE``), and by the listener's every (re)connection; ``None`` while it
        is not listening, when a change could pass unheard."""
        self._ensure_listener()
        return self._accounts_heard if self._listening else None

    def wait(self, request_id: str, *, timeout: float, since: object = None) -> None:
        self._ensure_listener()
        with self._changed:
            generation = self._generation if since is None else since
            self._changed.wait_for(lambda: self._generation != generation,
                                   timeout=min(timeout, WAIT_SLICE))

    def seal(self, *, wait: float = 1.0) -> bool:
        if not self._schema_current:
            self._check_schema()
        try:
            return self.sealer.seal(wait=wait)
        except psycopg.Error as exc:
            reraise(exc, "PostgreSQL")

    def sign_audit(self, key: SigningKey) -> None:
        """Sign the heads the sealer leaves with ``key`` (``signoff.store.sealer``)."""
        self.sealer.sign_with(key)

    def unsealed(self) -> tuple[int, int | None]:
        with self._reader() as tx:
            count, oldest, _ = pending(tx.cursor.connection)
        return count, oldest

    def close(self) -> None:
        self._run_close_hooks()
        self.sealer.stop()
        with contextlib.suppress(psycopg.Error, StoreError):
            if self._schema_current:
                self.sealer.seal(wait=0.5)  # what this store committed, sealed before it goes
        self._closing.set()
        if self._listener is not None:
            if self._listener.is_alive():
                # The listener waits for notifications half a second at a time: one on its
                # channel ends the wait now (a server's shutdown, a test's teardown).
                with contextlib.suppress(Exception), self.pool.connection(timeout=1) as conn:
                    conn.execute("SELECT pg_notify(%s, %s)", (self.channel, CLOSING_NOTICE))
            self._listener.join(timeout=2)
        with contextlib.suppress(psycopg.Error):
            self.pool.close()
            self.read_pool.close()

    def drop_schema(self) -> None:
        """Tests: remove the whole schema (only when one was given)."""
        if self.schema is None:
            raise ValueError("no schema to drop")
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(self.schema)))
