"""Sealing PostgreSQL's audit: committed events chained into ``audit`` after commit.

A transaction appends its events to ``audit_pending`` (a sequence number, its own
transaction id) and locks nothing shared. A seal pass, one at a time across every
server (a per-schema advisory lock), takes the pending events of transactions older
than the oldest one still running — ``txid < pg_snapshot_xmin(pg_current_snapshot())``,
so an event whose transaction might still commit is never passed — in ``(txid, seq)``
order, gives them the next indexes, hashes the chain, inserts them into ``audit`` and
deletes them from ``audit_pending``, in one transaction. A pass killed half-way leaves
nothing: its transaction rolls back and the next pass does the same work.

``Sealer`` is one store's background thread: a commit that appended pokes it, and it
passes until nothing sealable is left — at most once per ``PACE`` while commits keep
coming, since a pass costs about as much for one event as for thirty — re-trying soon
while events wait on a running transaction (or on another server's pass), and once a
second anyway so that the events of a server that died before sealing are sealed by the
others.

With a signing key (``sign_with``, handed down from the gate), a pass also signs the head it
leaves (``signoff.checkpoints``) in the same transaction as the events — at most once per
``SIGN_EVERY`` while passes keep coming; the head a skipped pass left is signed once that
is due, in a transaction of its own. Each server signs with its own key, whichever holds
the lock: the checkpoints of several servers interleave on one chain.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from signoff import checkpoints
from signoff.audit import chain_hash, to_us
from signoff.keys import SigningKey

BATCH = 2000  # events per pass at most: one pass is one transaction
RETRY = 0.005  # seconds: events left, held by a running transaction or another pass
HEARTBEAT = 1.0  # seconds: pass anyway (another server's events, a poke lost)
BACKOFF = 0.5  # seconds: the oldest event has waited this long (a long transaction)
GATHER = 0.005  # seconds after a poke before passing: one pass for the commits of a burst
PACE = 0.05  # seconds: passes start at least this far apart while commits keep coming
SIGN_EVERY = 1.0  # seconds: a sealer signs the head at most this often (and this late)

# What a pass works from, in one statement (one snapshot, taken after the lock's): the head,
# the count of pending events, and the sealable ones — below the oldest running
# transaction (those have all ended), or at or above the snapshot's xmax (ids no
# transaction of this cluster has had yet: rows restored from another cluster's dump,
# whose transactions ended there; a running one's rows are never seen) — in (txid, seq)
# order. One row with NULL event columns when nothing is sealable; none without a head.
_READ = ("SELECT h.idx, h.hash, (SELECT COUNT(*) FROM audit_pending), "
         "p.seq, p.at_us, p.kind, p.request_id, p.actor, p.data FROM audit_head h "
         "LEFT JOIN LATERAL (SELECT seq, at_us, kind, request_id, actor, data "
         "FROM audit_pending, pg_current_snapshot() AS s WHERE txid < pg_snapshot_xmin(s) "
         "OR txid >= pg_snapshot_xmax(s) ORDER BY txid, seq LIMIT %s) p ON true "
         "WHERE h.id = 1")
# The sealed events leave audit_pending in the statement that chains them into audit.
# The arrays go in binary (``%b``): no text escaping of every element, on either side.
_INSERT = ("WITH gone AS (DELETE FROM audit_pending WHERE seq = ANY(%b::bigint[])) "
           "INSERT INTO audit (idx, at_us, kind, request_id, actor, data, prev_hash, hash) "
           "SELECT * FROM unnest(%b::bigint[], %b::bigint[], %b::text[], %b::text[], "
           "%b::text[], %b::text[], %b::text[], %b::text[])")


# The pass's lock, and no wait for its commit's WAL flush (``synchronous_commit`` off for
# this transaction only). Sealing derives the chain from events that are durable already
# (their own transactions' commits); a pass lost in a crash rolls back whole, and the next
# one seals the same events in the same (txid, seq) order at the same indexes — all below
# the oldest running transaction then, so first in any later pass — with the same hashes.
# A flush less per seal is a flush less per commit under load.
_LOCK = ("SELECT pg_try_advisory_xact_lock(%s), "
         "set_config('synchronous_commit', 'off', true)")
_SIGNATURE = ("INSERT INTO audit_signatures (idx, kid, hash, at_us, signature) "
              "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (idx, kid) DO NOTHING")


def lock_key(schema: str) -> int:
    """The advisory lock of one schema's sealer (a signed 64-bit key)."""
    digest = hashlib.sha256(b"signoff-sealer:" + schema.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def seal_pass(conn: Any, key: int, batch: int = BATCH,
              before_commit: Callable[[], None] | None = None,
              signer: SigningKey | None = None) -> int | None:
    """One pass on ``conn``: how many events it sealed, or ``None`` when another sealer holds
    the lock. Commits what it sealed (``before_commit``: run just before, with everything
    written — the crash tests kill a sealer there); ``signer``: with the new head signed."""
    return _seal(conn, key, batch, before_commit, signer)[0]


def _seal(conn: Any, key: int, batch: int = BATCH,
          before_commit: Callable[[], None] | None = None,
          signer: SigningKey | None = None) -> tuple[int | None, int]:
    """``seal_pass``, and how many committed events it left in ``audit_pending`` (held back
    by a running transaction, or past ``batch``): the sealer's next wait depends on it.

    Two round trips on an autocommit connection (the store's), each one pipeline:
    ``BEGIN`` with the lock, then the head, the count of pending events and the sealable
    ones in one read (a statement of its own, so its snapshot sees everything committed
    before the lock was taken); the chain's insert, with the delete from ``audit_pending`` in the
    same statement, and ``COMMIT`` — three with ``before_commit``, which runs between
    them. (More on a connection that opens its transactions itself.)"""
    from signoff.store.pgbatch import pipelined  # noqa: PLC0415 (PostgreSQL only)

    lock, read = conn.cursor(), conn.cursor()
    try:
        # The lock first, in a statement of its own: the read's snapshot must come after it,
        # so that it sees everything the previous pass committed.
        reads = [(lock, _LOCK, (key,)), (read, _READ, (batch,))]
        if conn.autocommit:
            pipelined(conn, [(conn.cursor(), "BEGIN", ()), *reads])
        else:  # psycopg begins the transaction itself
            for cursor, statement, params in reads:
                cursor.execute(statement, params)
        got = lock.fetchone()
        found = read.fetchall()
        head = found[0][:2] if found else None
        rows = [row[3:] for row in found if row[3] is not None]
        # Counted in the same snapshot as the sealable read: it includes every row taken.
        left = max(0, int(found[0][2]) - len(rows)) if found else 0
        if not got or not got[0] or not rows:
            # Nothing written: a COMMIT writes no WAL record either, and keeps what psycopg
            # prepared on this connection (its rollback forgets it all).
            if conn.autocommit:
                conn.execute("COMMIT")
            else:
                conn.commit()
            if got and got[0] and head is None:
                raise RuntimeError("the audit head row is missing (schema migration 1 "
                                   "makes it)")
            return (None if not got or not got[0] else 0), left
        assert head is not None  # it came with the sealable rows
        index, prev = int(head[0]), str(head[1])
        columns: list[list[Any]] = [[] for _ in range(8)]
        seqs = []
        for seq, at_us, kind, request_id, actor, data in rows:
            index += 1
            digest = chain_hash(prev, index=index, at_us=int(at_us), kind=kind,
                                request_id=request_id, actor=actor, data=data)
            for column, value in zip(columns, (index, at_us, kind, request_id, actor, data,
                                               prev, digest), strict=True):
                column.append(value)
            seqs.append(seq)
            prev = digest
        writes: list[tuple[str, list[Any]]] = [(_INSERT, [seqs, *columns])]
        if signer is not None:
            checkpoint = checkpoints.sign(signer, index=index, hash=prev,
                                          at_us=to_us(time.time()))
            writes.append((_SIGNATURE, [index, signer.kid, prev, checkpoint.at_us,
                                        checkpoint.signature]))
        if before_commit is None and conn.autocommit:
            pipelined(conn, [*((conn.cursor(), statement, values)
                               for statement, values in writes),
                             (conn.cursor(), "COMMIT", ())])
        else:
            for statement, values in writes:
                conn.execute(statement, values)
            if before_commit is not None:
                before_commit()
            conn.commit()
        return len(rows), left
    except BaseException:
        with contextlib.suppress(Exception):
            conn.rollback()
        raise


def _pending_now(conn: Any) -> tuple[int, int | None, int | None]:
    """``pending`` as a read of its own (one round trip on an autocommit connection)."""
    if conn.autocommit:
        return pending(conn)
    with conn.transaction():
        return pending(conn)


def pending(conn: Any) -> tuple[int, int | None, int | None]:
    """``(count, oldest at_us, highest seq)`` of the committed events not sealed yet."""
    row = conn.execute("SELECT COUNT(*), MIN(at_us), MAX(seq) FROM audit_pending").fetchone()
    return int(row[0]), (None if row[1] is None else int(row[1])), (
        None if row[2] is None else int(row[2]))


class Sealer:
    """One store's sealing thread (started on the first poke, stopped by ``stop``)."""

    def __init__(self, connect: Callable[[], AbstractContextManager[Any]], key: int) -> None:
        self._connect = connect
        self._key = key
        self._poked = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._held_since: float | None = None  # events have been left over since
        self.signer: SigningKey | None = None  # signs the heads of its passes (``sign_with``)
        self._signed_at = -SIGN_EVERY  # monotonic time this sealer last signed
        self._owed = False  # a pass sealed events and did not sign: the head waits unsigned

    def sign_with(self, key: SigningKey) -> None:
        """Sign the heads of this sealer's passes with ``key`` from now on."""
        self.signer = key

    def poke(self) -> None:
        """A transaction that appended events committed."""
        if self._thread is None or not self._thread.is_alive():
            with self._start_lock:
                if self._stopping.is_set():
                    return
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._run, name="signoff-sealer",
                                                    daemon=True)
                    self._thread.start()
        self._poked.set()

    def seal(self, *, wait: float = 1.0) -> bool:
        """Seal, in the caller's thread, every event committed before the call; ``False``
        if some are still held (by a running transaction) after ``wait`` seconds."""
        deadline = time.monotonic() + wait
        with self._connect() as conn:
            count, _, target = _pending_now(conn)
            if count == 0 or target is None:
                return True
            while True:
                signer = self._due()  # at most once a SIGN_EVERY, as the thread's passes
                self._passed(seal_pass(conn, self._key, signer=signer), signer)
                if self._owed and self.signer is not None:
                    self.poke()  # the thread signs the head once that is due
                left = conn.execute("SELECT 1 FROM audit_pending WHERE seq <= %s LIMIT 1",
                                    (target,)).fetchone()
                if not conn.autocommit:
                    conn.rollback()
                if left is None:
                    return True
                if time.monotonic() >= deadline:
                    return False
                time.sleep(RETRY)

    def stop(self) -> None:
        self._stopping.set()
        self._poked.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=5)
        if self._owed and self.signer is not None:  # the last pass's head, signed before it goes
            with contextlib.suppress(Exception), self._connect() as conn:
                self._sign_head(conn)

    def _run(self) -> None:
        delay = HEARTBEAT
        started = -HEARTBEAT
        while not self._stopping.is_set():
            if self._poked.wait(timeout=delay):
                # Let the commits right behind this one land; under a steady stream of
                # commits, one pass per PACE seals them all.
                self._stopping.wait(max(GATHER, started + PACE - time.monotonic()))
            self._poked.clear()
            started = time.monotonic()
            if self._stopping.is_set():
                return
            try:
                delay = self._drain()
            except Exception:  # the database away: the heartbeat tries again
                delay = HEARTBEAT
                self._stopping.wait(BACKOFF)

    def _drain(self) -> float:
        """Pass until nothing sealable is left; how long to wait before the next pass."""
        progress = False
        count = 0
        with self._connect() as conn:
            while not self._stopping.is_set():
                signer = self._due()
                sealed, count = _seal(conn, self._key, signer=signer)
                if sealed is None:  # another server is sealing: look again soon
                    return RETRY
                self._passed(sealed, signer)
                progress = progress or sealed > 0
                if sealed < BATCH:
                    break
            if self._owed and self._due() is not None:
                self._sign_head(conn)
        now = time.monotonic()
        if self._owed:  # back when the signature is due
            return min(self._next_delay(count, progress, now),
                       max(RETRY, self._signed_at + SIGN_EVERY - now))
        return self._next_delay(count, progress, now)

    def _passed(self, sealed: int | None, signer: SigningKey | None) -> None:
        """What a pass that sealed ``sealed`` events (``signer``: signing its head) leaves
        owed: a head sealed unsigned is signed once that is due, by the sealer's thread."""
        if sealed:
            self._owed = signer is None and self.signer is not None  # without a key, never
            if signer is not None:
                self._signed_at = time.monotonic()

    def _due(self) -> SigningKey | None:
        """The key, if a signature is due (``None``: no key, or signed too recently)."""
        if self.signer is None or time.monotonic() - self._signed_at < SIGN_EVERY:
            return None
        return self.signer

    def _sign_head(self, conn: Any) -> None:
        """Sign the head as it is now, in a transaction of its own (the last pass skipped it)."""
        signer = self.signer
        assert signer is not None
        with conn.transaction():
            index, digest = conn.execute("SELECT idx, hash FROM audit_head WHERE id = 1"
                                         ).fetchone()
            checkpoint = checkpoints.sign(signer, index=int(index), hash=str(digest),
                                          at_us=to_us(time.time()))
            conn.execute(_SIGNATURE, [checkpoint.index, checkpoint.kid, checkpoint.hash,
                                      checkpoint.at_us, checkpoint.signature])
        self._owed = False
        self._signed_at = time.monotonic()

    def _next_delay(self, count: int, progress: bool, now: float) -> float:
        if count == 0 or progress:
            self._held_since = None if count == 0 else now
            return HEARTBEAT if count == 0 else RETRY
        # Nothing sealable while events wait: a transaction holds them back. Retry soon,
        # then, once it has lasted BACKOFF, at that pace (a long transaction).
        if self._held_since is None:
            self._held_since = now
        return BACKOFF if now - self._held_since > BACKOFF else RETRY
