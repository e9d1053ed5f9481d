"""PostgreSQL audit sealing: commits/s of transactions that append an audit event, and how
long a committed event waits to be sealed, beside two peers measured in the same run.

* ``signoff`` — ``PostgresStore`` transactions, one ``append_audit`` each (the sealer seals
  them after commit, ``signoff.store.sealer``).
* ``head lock`` — what schema 13 did: each transaction locks the head row, inserts the
  chained event and moves the head before it commits.
* ``floor`` — one plain ``INSERT`` per transaction into a table of its own: what the server
  does per commit with no audit at all.
* ``signoff, signed`` — ``signoff`` with a signing key: the sealer also signs the head it
  leaves (``signoff.checkpoints``), at most once per ``SIGN_EVERY``.

Seal lag: a probe commits one event every 20 ms and polls for it in ``audit`` — 50 times
with nothing else writing, then throughout the signoff run; p50 / p99 / max in ms.

    .venv/bin/python bench/seal_bench.py [--threads 32] [--seconds 5] [--dsn URL]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg

from _common import version
from signoff.audit import GENESIS, chain_hash
from signoff.keys import SigningKey
from signoff.store.postgres import PostgresStore

DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
IDLE_PROBES = 50


def run_threads(threads: int, seconds: float, work: Callable[[], None]) -> float:
    """Commits per second of ``threads`` threads running ``work`` for ``seconds``."""
    counts = [0] * threads
    stop = threading.Event()

    def loop(slot: int) -> None:
        while not stop.is_set():
            work()
            counts[slot] += 1

    pool = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    started = time.perf_counter()
    for thread in pool:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in pool:
        thread.join()
    return sum(counts) / (time.perf_counter() - started)


def signoff_run(dsn: str, schema: str, threads: int, seconds: float, *, sign: bool = False
                ) -> tuple[float, list[float], list[float], int]:
    store = PostgresStore(dsn, schema=schema, setup=True, max_size=threads + 4)
    if sign:
        store.sign_audit(SigningKey.generate())
    idle: list[float] = []
    lags: list[float] = []
    stop = threading.Event()

    def work() -> None:
        with store.transaction() as tx:
            tx.append_audit("call.allowed", at_us=1, request_id=None, actor="bench",
                            data={"tool": "read_file"})

    def probe(into: list[float], until: Callable[[], bool]) -> None:
        with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema}") as conn:
            while not until():
                kind = f"probe.{uuid.uuid4().hex[:8]}"
                with store.transaction() as tx:
                    tx.append_audit(kind, at_us=1, request_id=None, actor="bench", data={})
                committed = time.perf_counter()
                while conn.execute("SELECT 1 FROM audit WHERE kind = %s", (kind,)
                                   ).fetchone() is None:
                    time.sleep(0.0005)
                into.append((time.perf_counter() - committed) * 1000)
                stop.wait(0.02)

    probe(idle, lambda: len(idle) >= IDLE_PROBES)  # nothing else writing
    prober = threading.Thread(target=probe, args=(lags, stop.is_set))
    prober.start()
    try:
        rate = run_threads(threads, seconds, work)
    finally:
        stop.set()
        prober.join()
    assert store.seal(wait=10)
    result = store.verify_audit()
    store.close()
    if not result.ok:
        raise SystemExit(f"the chain does not verify after the run: {result}")
    if sign and not store_signed(dsn, schema):
        raise SystemExit("the signed run left no signed checkpoint")
    return rate, idle, lags, result.count


def store_signed(dsn: str, schema: str) -> int:
    with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema}") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM audit_signatures").fetchone()[0])


def thread_connections(dsn: str, schema: str) -> Callable[[], Any]:
    """Each calling thread's own connection to ``schema``, opened on first use."""
    local = threading.local()

    def conn_of() -> Any:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = psycopg.connect(dsn, options=f"-c search_path={schema}")
        return conn

    return conn_of


def head_lock_run(dsn: str, schema: str, threads: int, seconds: float) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.audit (idx BIGINT PRIMARY KEY, at_us BIGINT, "
                     "kind TEXT, request_id TEXT, actor TEXT, data TEXT, prev_hash TEXT, "
                     "hash TEXT)")
        conn.execute(f"CREATE TABLE {schema}.audit_head (id INT PRIMARY KEY, idx BIGINT, "
                     "hash TEXT)")
        conn.execute(f"INSERT INTO {schema}.audit_head VALUES (1, 0, %s)", (GENESIS,))
    conn_of = thread_connections(dsn, schema)

    def work() -> None:
        conn = conn_of()
        with conn.transaction():
            idx, prev = conn.execute("SELECT idx, hash FROM audit_head WHERE id = 1 "
                                     "FOR UPDATE").fetchone()
            digest = chain_hash(prev, index=idx + 1, at_us=1, kind="call.allowed",
                                request_id=None, actor="bench", data='{"tool":"read_file"}')
            conn.execute("INSERT INTO audit VALUES (%s, 1, 'call.allowed', NULL, 'bench', "
                         "'{\"tool\":\"read_file\"}', %s, %s)", (idx + 1, prev, digest))
            conn.execute("UPDATE audit_head SET idx = %s, hash = %s WHERE id = 1",
                         (idx + 1, digest))

    return run_threads(threads, seconds, work)


def floor_run(dsn: str, schema: str, threads: int, seconds: float) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.rows (id BIGINT GENERATED ALWAYS AS IDENTITY "
                     "PRIMARY KEY, data TEXT)")
    conn_of = thread_connections(dsn, schema)

    def work() -> None:
        conn = conn_of()
        with conn.transaction():
            conn.execute("INSERT INTO rows (data) VALUES ('{\"tool\":\"read_file\"}')")

    return run_threads(threads, seconds, work)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=DSN)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:8]
    schemas = {name: f"bench_{name}_{tag}" for name in ("signoff", "signed", "head", "floor")}
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        server = conn.execute("SHOW server_version").fetchone()[0]
        sync = conn.execute("SHOW synchronous_commit").fetchone()[0]
    print(f"# seal_bench: PostgreSQL {server} (synchronous_commit={sync}), psycopg "
          f"{version('psycopg')}, Python {sys.version.split()[0]}, {args.threads} threads, "
          f"{args.seconds:g} s per case")
    try:
        floor = floor_run(args.dsn, schemas["floor"], args.threads, args.seconds)
        head = head_lock_run(args.dsn, schemas["head"], args.threads, args.seconds)
        rate, idle, lags, count = signoff_run(args.dsn, schemas["signoff"], args.threads,
                                        args.seconds)
        signed, signed_idle, signed_lags, _ = signoff_run(
            args.dsn, schemas["signed"], args.threads, args.seconds, sign=True)
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            for schema in schemas.values():
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    print(f"{'case':<34}{'commits/s':>12}{'× floor':>10}")
    print(f"{'floor (plain INSERT)':<34}{floor:>12.0f}{1.0:>10.2f}")
    print(f"{'head lock (schema 13)':<34}{head:>12.0f}{head / floor:>10.2f}")
    print(f"{'signoff (sealed after commit)':<34}{rate:>12.0f}{rate / floor:>10.2f}")
    print(f"{'signoff, signed checkpoints':<34}{signed:>12.0f}{signed / floor:>10.2f}")
    print(f"signoff / head lock: {rate / head:.2f}×; {count} events sealed, chain verified")
    print(f"signed / unsigned: {signed / rate:.3f}×")
    for name, values in (("idle", idle), (f"under {args.threads} threads", lags),
                         ("signed, idle", signed_idle),
                         (f"signed, under {args.threads} threads", signed_lags)):
        if values:
            print(f"seal lag, {name}, {len(values)} probes: p50 {statistics.median(values):.1f}"
                  f" ms, p99 {pct(values, 0.99):.1f} ms, max {max(values):.1f} ms")


if __name__ == "__main__":
    main()
