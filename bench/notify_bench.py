"""Webhook delivery: events per second, and a request's creation → its webhook's arrival.

Run from the repository root::

    .venv/bin/python bench/notify_bench.py            # 2,000 events, 300 latency samples
    .venv/bin/python bench/notify_bench.py --quick    # 300 events, 60 samples
    .venv/bin/python bench/notify_bench.py --postgres postgresql://postgres@127.0.0.1/postgres

signoff: a real ``signoff serve`` app (uvicorn on a thread, the change feed and
the notifier) on SQLite, or PostgreSQL, with one ``[notify.webhooks]``
endpoint: a local HTTP receiver on loopback that answers 204 and records when
each ``webhook-id`` arrived.

* **throughput**: N requests are created with the notifier's endpoint not yet
  known to it (so nothing is sent), then the endpoint is registered and the
  clock runs until all N ``request.created`` webhooks have arrived: fan-out,
  claims, signing, POSTs and settles, end to end, in events per second.
* **latency**: one request at a time, every 20 ms, with the notifier idle;
  from just before ``propose`` returns to the receiver's arrival stamp
  (same process, same clock), p50 and p99.

The floor, measured in the same run against the same receiver: the same
payloads signed with ``standardwebhooks`` and POSTed with ``httpx`` by the
same number of threads (8) straight from a loop — what sending costs with no
database, no outbox and no retries — and a single signed POST's latency.
Ratios are signoff ÷ floor (throughput) and floor ÷ signoff (latency).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _common import expect, version
from signoff import Gate, Policy, RunContext, ToolCall
from signoff.kernel.proposing import ProposalKind
from signoff.notify import webhook_admin
from signoff.notify.config import Filters, NotifyConfig, Retry, new_secret
from signoff.notify.webhook import signed_headers
from signoff.server.app import create_app
from signoff.server.running import ServerThread
from signoff.store.base import Store
from signoff.store.sqlite import SqliteStore

POLICY = """
[policy]
version = "bench"
[tools.deploy]
[[rules]]
id = "asks"
effect = "ask"
tool = "deploy"
"""
WORKERS = 8


class Receiver:
    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.by_request: dict[str, float] = {}
        self.count = 0
        self.done = threading.Event()
        self.expect = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                now = time.perf_counter()
                receiver.arrived.setdefault(self.headers.get("webhook-id", ""), now)
                request_id = json.loads(body).get("data", {}).get("request_id")
                if request_id:
                    receiver.by_request.setdefault(request_id, now)
                receiver.count += 1
                if receiver.expect and len(receiver.arrived) >= receiver.expect:
                    receiver.done.set()
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def reset(self, expect: int) -> None:
        self.arrived.clear()
        self.count = 0
        self.expect = expect
        self.done.clear()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def open_store(postgres: str | None, directory: Path) -> Store:
    if postgres:
        from signoff.store.postgres import PostgresStore
        return PostgresStore(postgres, schema="bench_notify_" + str(int(time.time())),
                             setup=True)
    return SqliteStore(directory / "bench.db")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_signoff(store: Store, receiver: Receiver, events: int, samples: int
                ) -> tuple[float, list[float]]:
    gate = Gate(Policy.from_toml(POLICY), store, agent="bench")
    app = create_app(gate, notify=NotifyConfig(retry=Retry(base=1, cap=5),
                                                  allow_private_targets=True))
    calls = iter(range(10**9))

    def propose() -> str:
        n = next(calls)
        proposal = gate.propose(ToolCall(id=f"c{n}", name="deploy", args={"n": n}),
                                RunContext(thread_id=f"t{n}"))
        expect(proposal.kind is ProposalKind.PENDING and proposal.request is not None,
               "every call is held")
        assert proposal.request is not None
        return proposal.request.id

    with ServerThread(app):
        notifier = app.state.signoff.notifier
        # the endpoint first sees the log at its head: register it, let it settle there
        webhook_admin.add_endpoint(gate, NotifyConfig(allow_private_targets=True), name="bench",
                                   url=receiver.url, filters=Filters(events=("request.created",)),
                                   actor=None, now=time.time())
        secret_row = store.webhook_endpoints()[0]
        expect(secret_row.url == receiver.url, "the endpoint is registered")
        notifier.tick()
        # throughput: a backlog of N events, drained from the moment the notifier wakes
        with store.transaction() as tx:
            tx.delete_endpoint("bench")  # unknown to the notifier while the backlog is made
        for _ in range(events):
            propose()
        with store.transaction() as tx:
            tx.insert_endpoint(secret_row)
        receiver.reset(events)
        start = time.perf_counter()
        notifier.wake()
        expect(receiver.done.wait(600), "every event arrived")
        rate = events / (time.perf_counter() - start)
        expect(len(receiver.arrived) == events, "each event once")
        # latency: one request at a time
        latencies: list[float] = []
        receiver.reset(0)
        for _ in range(samples):
            before = time.perf_counter()
            request_id = propose()
            deadline = time.monotonic() + 30
            while request_id not in receiver.by_request:
                expect(time.monotonic() < deadline, "the webhook arrived")
                time.sleep(0.0002)
            latencies.append(receiver.by_request[request_id] - before)
            time.sleep(0.02)
    gate.close()
    return rate, latencies


def run_floor(receiver: Receiver, events: int, samples: int) -> tuple[float, list[float]]:
    secret = new_secret()
    body = json.dumps({"type": "request.created", "data": {"n": 0, "args": {"n": 0}}})
    with httpx.Client(timeout=10, limits=httpx.Limits(max_connections=WORKERS)) as client:
        def post(n: int) -> None:
            headers = signed_headers(secret, f"floor_{n}", body)
            headers["content-type"] = "application/json"
            client.post(receiver.url, content=body.encode(), headers=headers)

        receiver.reset(events)
        start = time.perf_counter()
        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(post, range(events)))
        rate = events / (time.perf_counter() - start)
        latencies = []
        for n in range(samples):
            before = time.perf_counter()
            post(events + n)
            latencies.append(receiver.arrived[f"floor_{events + n}"] - before)
    return rate, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--postgres", help="a PostgreSQL URL: bench that backend too")
    args = parser.parse_args()
    events, samples = (300, 60) if args.quick else (2000, 300)
    print(f"signoff webhooks: {events} events, {samples} latency samples; standardwebhooks "
          f"{version('standardwebhooks')}, httpx {version('httpx')}")
    receiver = Receiver()
    try:
        floor_rate, floor_lat = run_floor(receiver, events, samples)
        rows = [("floor: signed POSTs, 8 threads", floor_rate, floor_lat)]
        backends = [("sqlite", None)] + ([("postgres", args.postgres)] if args.postgres
                                         else [])
        for name, url in backends:
            with tempfile.TemporaryDirectory() as directory:
                store = open_store(url, Path(directory))
                try:
                    rate, lat = run_signoff(store, receiver, events, samples)
                finally:
                    drop = getattr(store, "drop_schema", None)
                    store.close()
                    if drop is not None:
                        drop()
            rows.append((f"signoff serve, {name}", rate, lat))
    finally:
        receiver.close()
    print(f"\n{'':34} {'events/s':>9} {'× floor':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'mean ms':>8}")
    for label, rate, lat in rows:
        print(f"{label:34} {rate:9.0f} {rate / floor_rate:8.2f} {1000 * pct(lat, 0.5):8.2f} "
              f"{1000 * pct(lat, 0.99):8.2f} {1000 * statistics.fmean(lat):8.2f}")
    print("\nlatency: from creating the request to the webhook's arrival at the receiver "
          "(floor: one signed POST)")


if __name__ == "__main__":
    main()
