"""The peer ``http_bench.py`` measures signoff's server against: the floor of a hand-rolled
approval queue, served the way ``signoff serve`` is (FastAPI on one uvicorn process).

    python bench/_http_peer.py --db PATH.db --port 0
    python bench/_http_peer.py --db postgresql://… --port 0

One table, ``peer_approvals (id, status, approver, decided_at)``, filled by the benchmark
before the server starts. ``POST /approvals/{id}/decision`` with ``{"kind": "approve",
"by": NAME}`` (a pydantic body) moves a pending row to ``approved`` in one write
transaction and answers ``{"id", "status"}``; 409 if the row was not pending. ``GET
/approvals/{id}?wait=SECONDS`` answers the row's status, long-polling while it is pending.

``POST /approvals/{id}/audited-decision`` is the audited floor: in one transaction it
reads the row (``FOR UPDATE`` on PostgreSQL), inserts a decision row, moves the row and
inserts two audit rows — the rows signoff's decision writes, and nothing more (no chain,
no authentication, no policy).

``POST /calls`` with ``{"tool", "args", "call_id"}`` is the floor of an allowed call:
it records the call (one INSERT into ``peer_calls``, committed) and answers
``{"status": "allowed"}`` — no policy, no audit chain.

What it does NOT do, on purpose: no authentication, no roles or quorum, no idempotency
keys, no audit log, no expiry, no policy; one UPDATE per decision. It is the least a
durable approval queue over HTTP can do, so the ratio says what signoff's checks cost.

It is as durable as signoff on each backend: SQLite in WAL mode with ``synchronous=FULL``
and ``BEGIN IMMEDIATE`` (a connection per thread); PostgreSQL through one psycopg pool of
8 connections (signoff's pool size) with the server's ``synchronous_commit``. Waking waiters:
on SQLite (one server) the deciding handler wakes this process's waiters directly; on
PostgreSQL the decision's transaction sends ``NOTIFY`` and every server LISTENs, so a
decision on one server wakes a waiter on another.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import socket
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

CHANNEL = "signoff_peer"
SCHEMA = ("CREATE TABLE IF NOT EXISTS peer_approvals (id TEXT PRIMARY KEY, "
          "status TEXT NOT NULL, approver TEXT, decided_at DOUBLE PRECISION)")
CALLS = ("CREATE TABLE IF NOT EXISTS peer_calls (id TEXT PRIMARY KEY, tool TEXT NOT NULL, "
         "args TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)")
# The audited floor's rows: a decision row and two audit rows per decision, as signoff
# writes (no chain: what any approval queue with an audit trail must write).
AUDITED = ("CREATE TABLE IF NOT EXISTS peer_decisions (id TEXT PRIMARY KEY, approval TEXT "
           "NOT NULL, approver TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)",
           "CREATE TABLE IF NOT EXISTS peer_audit (id TEXT PRIMARY KEY, kind TEXT NOT NULL, "
           "approval TEXT NOT NULL, actor TEXT NOT NULL, data TEXT NOT NULL, "
           "at DOUBLE PRECISION NOT NULL)")
_AUDITED_WRITES = (
    "INSERT INTO peer_decisions (id, approval, approver, at) VALUES (?, ?, ?, ?)",
    "INSERT INTO peer_audit (id, kind, approval, actor, data, at) "
    "VALUES (?, 'decision.recorded', ?, ?, ?, ?)",
    "UPDATE peer_approvals SET status = ?, approver = ?, decided_at = ? WHERE id = ?",
    "INSERT INTO peer_audit (id, kind, approval, actor, data, at) "
    "VALUES (?, 'request.approved', ?, ?, ?, ?)",
)


def _audited_params(request_id: str, status: str, approver: str) -> list[tuple[Any, ...]]:
    now, data = time.time(), json.dumps({"kind": "approve", "by": approver})
    return [(uuid.uuid4().hex, request_id, approver, now),
            (uuid.uuid4().hex, request_id, approver, data, now),
            (status, approver, now, request_id),
            (uuid.uuid4().hex, request_id, approver, data, now)]


class SqliteQueue:
    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self.wakes_locally = True

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
        return conn

    def decide(self, request_id: str, status: str, approver: str) -> bool:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute("UPDATE peer_approvals SET status = ?, approver = ?, "
                               "decided_at = ? WHERE id = ? AND status = 'pending'",
                               (status, approver, time.time(), request_id))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return cur.rowcount == 1

    def decide_audited(self, request_id: str, status: str, approver: str) -> bool:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT status FROM peer_approvals WHERE id = ?",
                               (request_id,)).fetchone()
            if row is None or row[0] != "pending":
                conn.execute("ROLLBACK")
                return False
            for statement, params in zip(_AUDITED_WRITES,
                                         _audited_params(request_id, status, approver),
                                         strict=True):
                conn.execute(statement, params)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return True

    def record(self, call_id: str, tool: str, args: str) -> bool:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute("INSERT INTO peer_calls (id, tool, args, at) VALUES (?, ?, ?, ?) "
                               "ON CONFLICT DO NOTHING", (call_id, tool, args, time.time()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return cur.rowcount == 1

    def status(self, request_id: str) -> str | None:
        row = self._conn().execute("SELECT status FROM peer_approvals WHERE id = ?",
                                   (request_id,)).fetchone()
        return None if row is None else str(row[0])

    def listen(self, wake: Any, stop: threading.Event) -> None:
        """One server: the deciding handler wakes waiters itself."""

    def close(self) -> None:
        pass


class PostgresQueue:
    def __init__(self, dsn: str) -> None:
        from psycopg_pool import ConnectionPool

        self.dsn = dsn
        # Autocommit connections: a read is one round trip; a decision opens a transaction.
        self.pool = ConnectionPool(dsn, min_size=1, max_size=8, kwargs={"autocommit": True},
                                   open=True)
        self.wakes_locally = False

    def decide(self, request_id: str, status: str, approver: str) -> bool:
        with self.pool.connection() as conn, conn.transaction():
            cur = conn.execute("UPDATE peer_approvals SET status = %s, approver = %s, "
                               "decided_at = %s WHERE id = %s AND status = 'pending'",
                               (status, approver, time.time(), request_id))
            if cur.rowcount != 1:
                return False
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, request_id))
        return True

    def decide_audited(self, request_id: str, status: str, approver: str) -> bool:
        with self.pool.connection() as conn, conn.transaction():
            row = conn.execute("SELECT status FROM peer_approvals WHERE id = %s FOR UPDATE",
                               (request_id,)).fetchone()
            if row is None or row[0] != "pending":
                return False
            for statement, params in zip(_AUDITED_WRITES,
                                         _audited_params(request_id, status, approver),
                                         strict=True):
                conn.execute(statement.replace("?", "%s"), params)
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, request_id))
        return True

    def record(self, call_id: str, tool: str, args: str) -> bool:
        with self.pool.connection() as conn:  # autocommit: the INSERT is its transaction
            cur = conn.execute("INSERT INTO peer_calls (id, tool, args, at) VALUES "
                               "(%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                               (call_id, tool, args, time.time()))
        return cur.rowcount == 1

    def status(self, request_id: str) -> str | None:
        with self.pool.connection() as conn:
            row = conn.execute("SELECT status FROM peer_approvals WHERE id = %s",
                               (request_id,)).fetchone()
        return None if row is None else str(row[0])

    def listen(self, wake: Any, stop: threading.Event) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            while not stop.is_set():
                for note in conn.notifies(timeout=0.5):
                    wake(note.payload)

    def close(self) -> None:
        self.pool.close()


class DecisionIn(BaseModel):
    kind: Literal["approve", "reject"]
    by: str


class CallIn(BaseModel):
    tool: str
    args: dict[str, Any]
    call_id: str


def create_app(queue: SqliteQueue | PostgresQueue) -> FastAPI:
    waiting: dict[str, set[asyncio.Event]] = {}
    stop = threading.Event()
    loop: asyncio.AbstractEventLoop | None = None

    def wake(request_id: str) -> None:  # on the event loop
        for event in waiting.pop(request_id, ()):
            event.set()

    def wake_from_thread(request_id: str) -> None:
        assert loop is not None
        loop.call_soon_threadsafe(wake, request_id)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        nonlocal loop
        loop = asyncio.get_running_loop()
        listener = threading.Thread(target=queue.listen, args=(wake_from_thread, stop),
                                    daemon=True)
        listener.start()
        try:
            yield
        finally:
            stop.set()
            listener.join(timeout=5)
            queue.close()

    app = FastAPI(title="approval-queue floor", lifespan=lifespan, docs_url=None,
                  redoc_url=None)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/approvals/{request_id}/decision")
    def decide(request_id: str, body: DecisionIn) -> dict[str, str]:
        status = "approved" if body.kind == "approve" else "rejected"
        if not queue.decide(request_id, status, body.by):
            raise HTTPException(409, f"{request_id} is not pending")
        if queue.wakes_locally:
            wake_from_thread(request_id)
        return {"id": request_id, "status": status}

    @app.post("/approvals/{request_id}/audited-decision")
    def decide_audited(request_id: str, body: DecisionIn) -> dict[str, str]:
        status = "approved" if body.kind == "approve" else "rejected"
        if not queue.decide_audited(request_id, status, body.by):
            raise HTTPException(409, f"{request_id} is not pending")
        if queue.wakes_locally:
            wake_from_thread(request_id)
        return {"id": request_id, "status": status}

    @app.post("/calls")
    def call(body: CallIn) -> dict[str, str]:
        if not queue.record(body.call_id, body.tool, json.dumps(body.args)):
            raise HTTPException(409, f"call {body.call_id} was recorded before")
        return {"call_id": body.call_id, "status": "allowed"}

    @app.get("/approvals/{request_id}")
    async def outcome(request_id: str, wait: float = 0) -> dict[str, str]:
        event = asyncio.Event()
        waiting.setdefault(request_id, set()).add(event)  # before reading: no lost wake-up
        try:
            status = await run_in_threadpool(queue.status, request_id)
            if status is None:
                raise HTTPException(404, f"no approval {request_id}")
            if status == "pending" and wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), min(wait, 60.0))
                status = await run_in_threadpool(queue.status, request_id) or status
            return {"id": request_id, "status": status}
        finally:
            events = waiting.get(request_id)
            if events is not None:
                events.discard(event)
                if not events:
                    waiting.pop(request_id, None)

    return app


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--db", required=True, help="a SQLite file or a postgresql:// URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    queue: SqliteQueue | PostgresQueue = (
        PostgresQueue(args.db) if args.db.startswith(("postgresql://", "postgres://"))
        else SqliteQueue(args.db))
    # Bound before uvicorn starts, as `signoff serve` does, so --port 0 prints the real port.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)
    print(f"peer server at http://{args.host}:{sock.getsockname()[1]}", flush=True)
    # The same uvicorn settings as `signoff serve` (signoff.server.running).
    config = uvicorn.Config(create_app(queue), log_level="warning", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=2, ws="none")
    server = uvicorn.Server(config)
    gc.collect()  # and startup's objects left out of full collections, as signoff serve does
    gc.freeze()
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
