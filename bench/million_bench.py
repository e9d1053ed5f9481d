"""A million stored requests: the API list, the inbox and ``/requests`` pages, and
``audit verify``, against a real ``signoff serve`` on SQLite, beside the database floor.

The database is seeded once (``--rows`` requests, 1 in 20 pending, and as many audit
events), then a ``signoff serve`` process answers ``--samples`` GETs of each page, one
at a time over one keep-alive connection. The floor is the same page's SQL run directly
on the file in this process (what no server can beat). Then ``signoff audit verify``
runs as a child process, and its peak RSS is read from the kernel. Last, ``db purge``
removes the older half (its time and longest transaction) and the chain is verified from
the checkpoint it left.

    .venv/bin/python bench/million_bench.py                 # 1,000,000 rows
    .venv/bin/python bench/million_bench.py --rows 100000   # a smaller check
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from _common import version
from http_bench import POLICY, server_process
from signoff.canonical import args_hash, canonical_text
from signoff.kernel.gate import Gate
from signoff.model import ApprovalRequest, RequestStatus, Risk
from signoff.policy import Policy
from signoff.store.retention import purge
from signoff.store.sqlite import SqliteStore

RISKS = (Risk.LOW, Risk.MEDIUM, Risk.HIGH, Risk.CRITICAL)
STATUSES = (RequestStatus.SUCCEEDED, RequestStatus.REJECTED, RequestStatus.EXPIRED)


def seed(path: Path, rows: int) -> str:
    """``rows`` requests and ``rows`` audit events; the approver's token."""
    store = SqliteStore(path, synchronous="NORMAL")
    # One timeline: the user is added before the first request, event n at request n's time.
    gate = Gate(Policy.from_toml(POLICY.format(root=path.parent), source="bench.toml"), store,
                clock=lambda: 1.7e9 - 1)
    _, token = gate.add_user("ann", roles=["ops"])
    batch = 20_000
    args = {"command": "make build"}
    text, digest = canonical_text(args), args_hash(args)
    for start in range(0, rows, batch):
        with store.transaction() as tx:
            for n in range(start, min(rows, start + batch)):
                tx.insert_request(ApprovalRequest(
                    id=f"req_{uuid.uuid4().hex}", call_id=f"c{n}", tool="execute", args=text,
                    args_hash=digest, status=(RequestStatus.PENDING if n % 20 == 0
                                              else STATUSES[n % 3]),
                    risk=RISKS[n % 4], summary=f"Run shell command: 'make build {n}'",
                    policy_version="bench-1", created_at=1.7e9 + n, updated_at=1.7e9 + n,
                    thread_id=f"t{n % 5000}", agent="bot"))
            tx.append_audits([("call.allowed", int((1.7e9 + n) * 1e6), "bot", {"n": n})
                              for n in range(start, min(rows, start + batch))])
    store.close()
    return token


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def timed(samples: int, call: object) -> list[float]:
    out = []
    for _ in range(samples):
        started = time.perf_counter()
        call()  # type: ignore[operator]
        out.append((time.perf_counter() - started) * 1000)
    return out


# ``signoff audit verify`` in a process of its own, which then prints its own peak RSS (KiB).
VERIFY = ("import resource, sys; from signoff.cli import main; "
          "main(['audit', 'verify', '--db', sys.argv[1]]); "
          "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")

FLOOR_SQL = {
    "API list": "SELECT * FROM requests ORDER BY created_at DESC, id LIMIT 101",
    "API list, pending": "SELECT * FROM requests WHERE status = 'pending' "
                         "ORDER BY created_at DESC, id LIMIT 101",
    "inbox": "SELECT * FROM requests WHERE status = 'pending' "
             "ORDER BY created_at DESC, id LIMIT 51",
    "/requests": "SELECT * FROM requests ORDER BY created_at DESC, id LIMIT 51",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--dir", help="keep the database here (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(args.dir or scratch)
        db = where / "million.db"
        started = time.monotonic()
        token = seed(db, args.rows)
        seeded = time.monotonic() - started
        policy = where / "signoff.toml"
        policy.write_text(POLICY.format(root=where))
        print(f"# million_bench: {args.rows:,} requests and audit events seeded in "
              f"{seeded:.0f} s ({db.stat().st_size / 2**20:.0f} MiB); signoff "
              f"{version('signoff')}, SQLite {sqlite3.sqlite_version}, Python "
              f"{sys.version.split()[0]}; {args.samples} GETs per page, one at a time")
        floor_conn = sqlite3.connect(db)
        exe = Path(sys.executable).with_name("signoff")
        with server_process("signoff", [str(exe), "serve", "--db", str(db), "--policy",
                                        str(policy), "--port", "0"], where) as proc, \
                httpx.Client(base_url=proc.url, timeout=30,
                             headers={"Authorization": f"Bearer {token}"}) as client:
            pages = {"API list": "/api/v1/requests",
                     "API list, pending": "/api/v1/requests?status=pending",
                     "inbox": "/inbox", "/requests": "/requests"}
            print(f"{'page':<22}{'p50 ms':>9}{'p99 ms':>9}{'floor p50':>11}{'floor p99':>11}"
                  f"{'p99 ÷ floor':>13}")
            for name, path in pages.items():
                response = client.get(path)
                if response.status_code != 200:
                    raise SystemExit(f"{path}: {response.status_code} {response.text[:200]}")
                timed(20, lambda path=path: client.get(path))  # warm
                served = timed(args.samples, lambda path=path: client.get(path).content)
                sql = FLOOR_SQL[name]
                floor = timed(args.samples, lambda sql=sql: floor_conn.execute(sql).fetchall())
                print(f"{name:<22}{statistics.median(served):>9.2f}{pct(served, .99):>9.2f}"
                      f"{statistics.median(floor):>11.2f}{pct(floor, .99):>11.2f}"
                      f"{pct(served, .99) / pct(floor, .99):>12.1f}×")
            status = Path(f"/proc/{proc.popen.pid}/status").read_text()
            rss = {line.split(":")[0]: int(line.split()[1]) // 1024
                   for line in status.splitlines() if line.startswith(("VmRSS", "VmHWM"))}
            print(f"server RSS {rss.get('VmRSS')} MiB now, {rss.get('VmHWM')} MiB peak")
        floor_conn.close()
        started = time.monotonic()
        verified = subprocess.run([sys.executable, "-c", VERIFY, str(db)],
                                  capture_output=True, text=True, check=False)
        took = time.monotonic() - started
        said, _, peak = verified.stdout.strip().rpartition("\n")
        print(f"audit verify: {said or verified.stderr.strip()} in {took:.1f} s, "
              f"peak RSS {int(peak or 0) // 1024} MiB (the command's own process)")
        purge_half(db, args.rows)


def purge_half(db: Path, rows: int) -> None:
    """``db purge`` of the older half: how long, and the longest transaction (how long a
    server's writers wait on it at most); then the chain verified from its checkpoint."""
    store = SqliteStore(db)
    spans: list[float] = []
    real = store.transaction

    @contextlib.contextmanager
    def timed_transaction() -> Iterator[Any]:
        started = time.perf_counter()
        with real() as tx:
            yield tx
        spans.append(time.perf_counter() - started)

    store.transaction = timed_transaction  # type: ignore[method-assign,assignment]
    started = time.monotonic()
    done = purge(store, before=1.7e9 + rows // 2, now=time.time(), actor="bench")
    took = time.monotonic() - started
    checked = store.verify_audit()
    store.close()
    print(f"db purge of the older half: {done.requests:,} requests and {done.events:,} audit "
          f"events in {took:.1f} s, {len(spans)} transactions: median "
          f"{statistics.median(spans) * 1000:.0f} ms, the longest {max(spans) * 1000:.0f} ms "
          f"(#{spans.index(max(spans)) + 1}); audit verify after: ok={checked.ok}, "
          f"{checked.count:,} events from checkpoint {checked.anchor:,}")


if __name__ == "__main__":
    main()
