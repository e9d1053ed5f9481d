"""Decisions over HTTP: ``signoff serve`` under concurrent approvers, and decision-to-wake
latency, beside a hand-rolled approval-queue floor measured in the same run.

Run from the repository root::

    .venv/bin/python bench/http_bench.py                  # full run (about 2 minutes)
    .venv/bin/python bench/http_bench.py --quick          # a smoke check (under a minute)
    .venv/bin/python bench/http_bench.py --skip-postgres  # SQLite only

Every server is a real process (``signoff serve``, or ``bench/_http_peer.py`` for the
floor) on a free port, so the load generator never shares the server's GIL. The load is
``--clients`` threads in this process, each with its own ``httpx.Client`` (one keep-alive
connection), each approving distinct pending requests that were created before the
server started (through a ``Gate`` on the same database; only the decisions go over
HTTP). Three measurements:

1. decisions/s and p50/p99 decision latency against one server on SQLite (WAL,
   ``synchronous=FULL``);
2. the same against two servers on one PostgreSQL, the clients split across both;
3. decision-to-wake: an agent long-polls ``GET /api/v1/calls/{id}?wait=30`` (on
   PostgreSQL: on the *other* server than the one deciding), an approver decides; the
   time from the decision's response (and from its request being sent) to the agent's
   response.

The floor (``bench/_http_peer.py``) is FastAPI on uvicorn, served the same way, that
records one approval row per POST: no authentication, quorum, audit or policy. The
systems take turns in rounds, so a noisy moment lands on all of them. See
bench/README.md for the method and how to read the tables.
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import gc
import math
import os
import platform
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import signoff
from _common import expect, version
from _postgres import cpu_between, redact, show
from signoff import Policy, RunContext, ToolCall
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import ProposalKind

HERE = Path(__file__).resolve().parent
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
COMMAND = "make build"
WARMUP_PER_CLIENT = 3  # untimed decisions per client per round (opens the connection)
WAKE_WARMUP = 2  # untimed samples per pair per round
LONG_POLL = 30

POLICY = """\
[policy]
version = "http-bench-1"
default_review_mode = "manual"
gated = ["execute"]
unknown_tools = "ask"

[workspace]
name = "bench"
root = "{root}"

[tools.execute]
shell = "command"

[[rules]]
id = "builds-need-a-human"
effect = "ask"
tool = "execute"
command = "make *"
"""


def nearest_rank(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# ----------------------------------------------------------------------------------------------
# Server processes.
# ----------------------------------------------------------------------------------------------


@dataclass
class Proc:
    label: str
    url: str
    popen: subprocess.Popen[bytes]
    log: Path

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (Linux ``/proc``; 0 elsewhere)."""
        try:
            fields = Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def server_process(label: str, command: list[str], cwd: Path,
                   timeout: float = 60.0) -> Iterator[Proc]:
    """Start ``command``, read its URL from the first lines it prints, wait for /healthz."""
    log = cwd / f"{label}.log"
    with open(log, "wb") as out:
        popen = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        url = None
        while url is None:
            found = re.search(r"server at (http://\S+)", log.read_text(errors="replace"))
            if found:
                url = found.group(1)
            elif popen.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{label} did not start:\n{log.read_text(errors='replace')}")
            else:
                time.sleep(0.05)
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/healthz", timeout=5).status_code == 200:
                    break
            if popen.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{label} did not answer /healthz:\n"
                                 f"{log.read_text(errors='replace')}")
            time.sleep(0.05)
        yield Proc(label, url, popen, log)
    finally:
        popen.terminate()
        try:
            popen.wait(10)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait(10)


def signoff_serve(label: str, db: str, policy: Path, cwd: Path) -> Any:
    exe = Path(sys.executable).with_name("signoff")
    return server_process(label, [str(exe), "serve", "--db", db, "--policy", str(policy),
                                  "--port", "0"], cwd)


def peer_serve(label: str, db: str, cwd: Path) -> Any:
    return server_process(label, [sys.executable, str(HERE / "_http_peer.py"), "--db", db,
                                  "--port", "0"], cwd)


# ----------------------------------------------------------------------------------------------
# The systems under test: how to decide and how to wait, over HTTP.
# ----------------------------------------------------------------------------------------------


class System(abc.ABC):
    key: str
    name: str
    backend: str
    servers: list[Proc]
    floor = False

    def __init__(self, ids: list[str]) -> None:
        self._ids = ids
        self._lock = threading.Lock()

    def take(self, n: int) -> list[str]:
        with self._lock:
            expect(len(self._ids) >= n, f"{self.key}: ran out of pending requests")
            taken, self._ids = self._ids[:n], self._ids[n:]
        return taken

    @abc.abstractmethod
    def decider_headers(self, client: int) -> dict[str, str]: ...

    @abc.abstractmethod
    def waiter_headers(self) -> dict[str, str]: ...

    @abc.abstractmethod
    def decision(self, request_id: str, client: int) -> tuple[str, dict[str, Any]]: ...

    @abc.abstractmethod
    def wait_path(self, request_id: str) -> str: ...

    @abc.abstractmethod
    def decided(self, answer: dict[str, Any]) -> bool: ...

    @abc.abstractmethod
    def woke(self, answer: dict[str, Any]) -> bool: ...


class SignoffSystem(System):
    name = "signoff serve"

    def __init__(self, key: str, backend: str, servers: list[Proc], ids: list[str], *,
                 approvers: list[str], agent: str) -> None:
        super().__init__(ids)
        self.key, self.backend, self.servers = key, backend, servers
        self.approvers, self.agent = approvers, agent

    def decider_headers(self, client: int) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.approvers[client % len(self.approvers)]}"}

    def waiter_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.agent}"}

    def decision(self, request_id: str, client: int) -> tuple[str, dict[str, Any]]:
        return f"/api/v1/requests/{request_id}/decisions", {"kind": "approve"}

    def wait_path(self, request_id: str) -> str:
        return f"/api/v1/calls/{request_id}?wait={LONG_POLL}"

    def decided(self, answer: dict[str, Any]) -> bool:
        return answer.get("status") == "approved" and answer.get("transitioned") is True

    def woke(self, answer: dict[str, Any]) -> bool:
        return answer.get("kind") == "approved"


class FloorSystem(System):
    name = "floor (FastAPI+uvicorn)"
    floor = True

    def __init__(self, key: str, backend: str, servers: list[Proc], ids: list[str]) -> None:
        super().__init__(ids)
        self.key, self.backend, self.servers = key, backend, servers

    def decider_headers(self, client: int) -> dict[str, str]:
        return {}

    def waiter_headers(self) -> dict[str, str]:
        return {}

    def decision(self, request_id: str, client: int) -> tuple[str, dict[str, Any]]:
        return f"/approvals/{request_id}/decision", {"kind": "approve",
                                                     "by": f"approver-{client:02d}"}

    def wait_path(self, request_id: str) -> str:
        return f"/approvals/{request_id}?wait={LONG_POLL}"

    def decided(self, answer: dict[str, Any]) -> bool:
        return answer.get("status") == "approved"

    def woke(self, answer: dict[str, Any]) -> bool:
        return answer.get("status") == "approved"


# ----------------------------------------------------------------------------------------------
# Seeding: pending requests created before the servers start.
# ----------------------------------------------------------------------------------------------


def seed_signoff(store: Any, policy: Policy, count: int, approvers: int,
                 threads: int = 1) -> tuple[list[str], list[str], str]:
    """``count`` pending requests proposed by the agent ``bot``; approver and agent tokens."""
    gate = Gate(policy, store, agent="bot")
    tokens = [gate.add_user(f"approver-{n:02d}", roles=[])[1] for n in range(approvers)]
    _, agent = gate.add_user("bot", kind="agent")
    run = uuid.uuid4().hex[:8]

    def propose(n: int) -> str:
        proposal = gate.propose(ToolCall(id=f"c-{run}-{n}", name="execute",
                                         args={"command": COMMAND}),
                                RunContext(thread_id=f"t-{run}-{n}", principal="bot"))
        expect(proposal.kind is ProposalKind.PENDING and proposal.request is not None,
               f"seeding: propose said {proposal.kind}")
        assert proposal.request is not None
        return proposal.request.id

    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            ids = list(pool.map(propose, range(count)))
    else:
        ids = [propose(n) for n in range(count)]
    return ids, tokens, agent


def floor_ids(count: int) -> list[str]:
    run = uuid.uuid4().hex[:8]
    return [f"r-{run}-{n}" for n in range(count)]


def seed_floor_sqlite(path: Path, ids: list[str]) -> None:
    from _http_peer import AUDITED, CALLS, SCHEMA

    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        for statement in (SCHEMA, CALLS, *AUDITED):
            conn.execute(statement)
        conn.executemany("INSERT INTO peer_approvals (id, status) VALUES (?, 'pending')",
                         [(i,) for i in ids])
        conn.commit()


def seed_floor_pg(dsn: str, ids: list[str]) -> None:
    import psycopg

    from _http_peer import AUDITED, CALLS, SCHEMA

    with psycopg.connect(dsn) as conn:
        for statement in (SCHEMA, CALLS, *AUDITED):
            conn.execute(statement)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO peer_approvals (id, status) VALUES (%s, 'pending')",
                            [(i,) for i in ids])


# ----------------------------------------------------------------------------------------------
# Load: decisions per second under concurrent clients.
# ----------------------------------------------------------------------------------------------


@dataclass
class Load:
    latencies: list[int] = field(default_factory=list)  # ns per decision
    wall: int = 0  # ns, summed over rounds
    server_cpu: float = 0.0  # s, all of the system's server processes
    client_cpu: float = 0.0  # s, this process
    pg_cpu: float = 0.0  # s, the PostgreSQL backends of the system's database (if read)
    errors: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return len(self.latencies) / (self.wall / 1e9) if self.wall else float("nan")

    def ms(self, q: float) -> float:
        return (statistics.median(self.latencies) if q == 0.5
                else nearest_rank(self.latencies, q)) / 1e6

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.latencies) / 1e6


def load_round(system: System, clients: int, per_client: int, into: Load, *,
               backends: Callable[[], dict[int, float]] | None = None) -> None:
    """One round: every client warms up, all start together, each approves ``per_client``
    distinct pending requests on its server (clients are spread over the servers).
    ``backends`` reads the database's backends' CPU (``_postgres.backend_cpu``), to count
    PostgreSQL's own work for the timed part as well as the servers'."""
    warm = [system.take(WARMUP_PER_CLIENT) for _ in range(clients)]
    work = [system.take(per_client) for _ in range(clients)]
    start = threading.Barrier(clients + 1)
    ends = [0] * clients
    latencies: list[list[int]] = [[] for _ in range(clients)]
    errors: list[str] = []

    def client(n: int) -> None:
        server = system.servers[n % len(system.servers)]
        clock = time.perf_counter_ns
        try:
            with httpx.Client(base_url=server.url, headers=system.decider_headers(n),
                              timeout=60) as http:
                for request_id in warm[n]:
                    path, body = system.decision(request_id, n)
                    http.post(path, json=body).raise_for_status()
                start.wait()
                mine = latencies[n]
                for request_id in work[n]:
                    path, body = system.decision(request_id, n)
                    t0 = clock()
                    response = http.post(path, json=body)
                    t1 = clock()
                    if response.status_code != 200 or not system.decided(response.json()):
                        errors.append(f"{response.status_code} {response.text[:200]}")
                        break
                    mine.append(t1 - t0)
                ends[n] = clock()
        except Exception as exc:
            errors.append(f"client {n}: {type(exc).__name__}: {exc}")
            start.abort()

    # Daemon threads, and the barrier broken on the way out: an interrupted run exits.
    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    # The load generator collects no garbage while the clients run: a full collection here
    # (100-400 ms with 128 client threads) stalled every client at once, and was measured as
    # the servers' latency. Collected after the round instead.
    gc.disable()
    try:
        try:
            start.wait()
        except threading.BrokenBarrierError:
            pass
        except BaseException:
            start.abort()
            raise
        began = time.perf_counter_ns()
        cpu0 = sum(s.cpu_seconds() for s in system.servers), time.process_time()
        pg0 = backends() if backends is not None else {}
        for thread in threads:
            thread.join()
        cpu1 = sum(s.cpu_seconds() for s in system.servers), time.process_time()
    finally:
        gc.enable()
    gc.collect()
    if backends is not None:
        into.pg_cpu += cpu_between(pg0, backends())
    into.errors.extend(errors)
    expect(not errors, f"{system.key}: {len(errors)} decisions failed, e.g. {errors[:3]}")
    into.wall += max(ends) - began
    into.server_cpu += cpu1[0] - cpu0[0]
    into.client_cpu += cpu1[1] - cpu0[1]
    for mine in latencies:
        into.latencies.extend(mine)


# ----------------------------------------------------------------------------------------------
# Decision → wake.
# ----------------------------------------------------------------------------------------------


@dataclass
class Wake:
    after_response: list[int] = field(default_factory=list)  # wake - decision response, ns
    after_send: list[int] = field(default_factory=list)  # wake - decision request sent, ns
    decide: list[int] = field(default_factory=list)  # the decision's own round trip, ns
    early: int = 0  # the agent answered before the decision was sent: not parked, dropped

    def ms(self, data: list[int], q: float) -> float:
        return (statistics.median(data) if q == 0.5 else nearest_rank(data, q)) / 1e6


def wake_round(system: System, pairs: int, per_pair: int, head_start: float,
               into: Wake) -> None:
    """``pairs`` agent/approver pairs, each taking ``per_pair`` samples in turn: the agent
    sends its long-poll, the approver waits ``head_start`` s (so the agent is parked on the
    server) and decides; both then meet before the next sample. With two servers the agent
    waits on one and the approver decides on the other."""
    servers = system.servers
    ids = [system.take(per_pair + WAKE_WARMUP) for _ in range(pairs)]
    records: list[list[dict[str, Any]]] = [[{} for _ in pair] for pair in ids]
    errors: list[str] = []

    def pair(p: int) -> list[threading.Thread]:
        on_wait = servers[(p + 1) % len(servers)]
        on_decide = servers[p % len(servers)]
        go, done = threading.Barrier(2), threading.Barrier(2)
        clock = time.perf_counter_ns

        def failed(side: str, problem: str) -> None:
            """Record it and break both barriers, so the other side stops too."""
            errors.append(f"pair {p} {side}: {problem}")
            go.abort()
            done.abort()

        def agent() -> None:
            try:
                with httpx.Client(base_url=on_wait.url, headers=system.waiter_headers(),
                                  timeout=LONG_POLL + 30) as http:
                    for request_id, rec in zip(ids[p], records[p], strict=True):
                        go.wait()
                        response = http.get(system.wait_path(request_id))
                        rec["wake"] = clock()
                        if response.status_code != 200 or not system.woke(response.json()):
                            failed("agent", f"{response.status_code} {response.text[:200]}")
                            return
                        done.wait()
            except threading.BrokenBarrierError:
                pass
            except Exception as exc:
                failed("agent", f"{type(exc).__name__}: {exc}")

        def approver() -> None:
            try:
                with httpx.Client(base_url=on_decide.url, headers=system.decider_headers(p),
                                  timeout=60) as http:
                    for request_id, rec in zip(ids[p], records[p], strict=True):
                        go.wait()
                        time.sleep(head_start)
                        path, body = system.decision(request_id, p)
                        rec["sent"] = clock()
                        response = http.post(path, json=body)
                        rec["answered"] = clock()
                        if response.status_code != 200 or not system.decided(response.json()):
                            failed("approver",
                                   f"{response.status_code} {response.text[:200]}")
                            return
                        done.wait()
            except threading.BrokenBarrierError:
                pass
            except Exception as exc:
                failed("approver", f"{type(exc).__name__}: {exc}")

        sides = [threading.Thread(target=agent, daemon=True),
                 threading.Thread(target=approver, daemon=True)]
        for side in sides:
            side.start()
        return sides

    threads = [side for p in range(pairs) for side in pair(p)]
    for thread in threads:
        thread.join()
    expect(not errors, f"{system.key}: wake run failed: {errors[:3]}")
    for pair_records in records:
        for rec in pair_records[WAKE_WARMUP:]:
            if rec["wake"] <= rec["sent"]:
                into.early += 1
                continue
            into.after_response.append(rec["wake"] - rec["answered"])
            into.after_send.append(rec["wake"] - rec["sent"])
            into.decide.append(rec["answered"] - rec["sent"])


# ----------------------------------------------------------------------------------------------
# PostgreSQL: a database of the run's own.
# ----------------------------------------------------------------------------------------------


@dataclass
class PgDatabase:
    admin_dsn: str
    dsn: str
    name: str
    version: str
    settings: str

    def drop(self) -> None:
        import psycopg
        from psycopg import sql

        with contextlib.suppress(psycopg.Error), \
                psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(self.name)))


def create_pg_database(admin_dsn: str) -> tuple[PgDatabase | None, str]:
    """A fresh database for the run (dropped after), or why PostgreSQL is skipped."""
    try:
        import psycopg
        from psycopg import sql
        from psycopg.conninfo import make_conninfo
    except ImportError as exc:
        return None, f"psycopg is not importable: {exc}"
    try:
        with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=3) as conn:
            shown = show(conn, "server_version", "synchronous_commit", "fsync",
                         "wal_sync_method", "max_connections")
            version_text = shown.pop("server_version").split()[0]
            settings = ", ".join(f"{k}={v}" for k, v in shown.items())
            row = conn.execute("SELECT count(*) FROM pg_stat_activity").fetchone()
            settings += f" ({row[0] if row else '?'} in use before the run)"
            name = "signoff_http_bench_" + uuid.uuid4().hex[:8]
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except Exception as exc:  # unreachable, refused, no CREATE DATABASE: skip, say why
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return None, f"{type(exc).__name__}: {first}"
    return PgDatabase(admin_dsn, make_conninfo(admin_dsn, dbname=name), name, version_text,
                      settings), ""


def _url(dsn: str) -> str:
    """``signoff serve --db`` takes a ``postgresql://`` URL."""
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(dsn)
    auth = parts.get("user", "")
    if parts.get("password"):
        auth += f":{parts['password']}"
    host = f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}"
    return f"postgresql://{auth + '@' if auth else ''}{host}/{parts.get('dbname', '')}"


# ----------------------------------------------------------------------------------------------
# The run.
# ----------------------------------------------------------------------------------------------


@dataclass
class Plan:
    requests: int
    clients: int
    rounds: int
    wake_samples: int
    pairs: int
    head_start: float

    @property
    def per_client(self) -> int:
        return max(1, self.requests // (self.clients * self.rounds))

    @property
    def per_pair(self) -> int:
        return max(1, self.wake_samples // (self.pairs * self.rounds))

    def needed(self) -> int:
        """Pending requests one system uses in a run (a margin for rounding)."""
        load = self.rounds * self.clients * (WARMUP_PER_CLIENT + self.per_client)
        wake = self.rounds * self.pairs * (WAKE_WARMUP + self.per_pair)
        return load + wake + 16


def measure(systems: Sequence[System], plan: Plan, loads: dict[str, Load],
            wakes: dict[str, Wake]) -> None:
    """Load rounds, then wake rounds; the systems take turns, starting with a different one
    each round."""
    for r in range(plan.rounds):
        for system in systems[r % len(systems):] + systems[:r % len(systems)]:
            load_round(system, plan.clients, plan.per_client,
                       loads.setdefault(system.key, Load()))
    for r in range(plan.rounds):
        for system in systems[r % len(systems):] + systems[:r % len(systems)]:
            wake_round(system, plan.pairs, plan.per_pair, plan.head_start,
                       wakes.setdefault(system.key, Wake()))


def run_sqlite(tmp: Path, policy_path: Path, plan: Plan, loads: dict[str, Load],
               wakes: dict[str, Wake]) -> list[System]:
    import inspect

    from signoff.store.sqlite import SqliteStore

    policy = Policy.load(policy_path)
    db = tmp / "signoff.db"
    # Seeding is not measured: synchronous=NORMAL makes it quicker. The server opens its own
    # connections with SqliteStore's default, FULL (checked here), and WAL is persistent.
    default_sync = inspect.signature(SqliteStore).parameters["synchronous"].default
    expect(default_sync == "FULL", f"SqliteStore's default synchronous is {default_sync}")
    store = SqliteStore(db, synchronous="NORMAL")
    ids, approvers, agent = seed_signoff(store, policy, plan.needed(), plan.clients)
    store.close()
    with contextlib.closing(sqlite3.connect(db)) as conn:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    expect(mode == "wal", f"signoff.db is in {mode} mode, not WAL")
    floor_db = tmp / "floor.db"
    fids = floor_ids(plan.needed())
    seed_floor_sqlite(floor_db, fids)
    with ExitStack() as stack:
        sig = stack.enter_context(signoff_serve("signoff-sqlite", str(db), policy_path, tmp))
        peer = stack.enter_context(peer_serve("floor-sqlite", str(floor_db), tmp))
        backend = "1 × SQLite"
        systems: list[System] = [
            SignoffSystem("signoff-sqlite", backend, [sig], ids, approvers=approvers,
                          agent=agent),
            FloorSystem("floor-sqlite", backend, [peer], fids)]
        measure(systems, plan, loads, wakes)
    return systems


def run_postgres(tmp: Path, policy_path: Path, plan: Plan, pg: PgDatabase, *,
                 loads: dict[str, Load], wakes: dict[str, Wake]) -> list[System]:
    from psycopg.conninfo import make_conninfo

    from signoff.store.postgres import PostgresStore

    policy = Policy.load(policy_path)
    # Seeding is not measured: synchronous_commit=off and 8 threads make it quicker. The
    # servers connect with the plain DSN (the server's synchronous_commit).
    fast = make_conninfo(pg.dsn, options="-c synchronous_commit=off")
    store = PostgresStore(fast, setup=True)
    try:
        ids, approvers, agent = seed_signoff(store, policy, plan.needed(), plan.clients,
                                             threads=8)
    finally:
        store.close()
    fids = floor_ids(plan.needed())
    seed_floor_pg(pg.dsn, fids)
    url = _url(pg.dsn)
    with ExitStack() as stack:
        sig = [stack.enter_context(signoff_serve(f"signoff-pg-{n}", url, policy_path, tmp))
               for n in "ab"]
        peer = [stack.enter_context(peer_serve(f"floor-pg-{n}", url, tmp)) for n in "ab"]
        backend = "2 × PostgreSQL"
        systems: list[System] = [
            SignoffSystem("signoff-pg", backend, sig, ids, approvers=approvers, agent=agent),
            FloorSystem("floor-pg", backend, peer, fids)]
        measure(systems, plan, loads, wakes)
    return systems


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _load() -> str:
    if not hasattr(os, "getloadavg"):
        return "n/a"
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(plan: Plan, pg_dsn: str | None, directory: str | None) -> int:
    print("signoff HTTP benchmark: decisions over real HTTP against `signoff serve` processes")
    print(f"  python    {sys.version.split()[0]} ({platform.python_implementation()}), "
          f"{platform.platform()}")
    print(f"  machine   {platform.machine()}, {os.cpu_count()} CPUs, {_cpu_model()}, "
          f"load average {_load()}")
    print(f"  packages  signoff {signoff.__version__}, fastapi {version('fastapi')}, "
          f"starlette {version('starlette')}, uvicorn {version('uvicorn')}, "
          f"h11 {version('h11')}, httpx {version('httpx')}, psycopg {version('psycopg')}, "
          f"sqlite {sqlite3.sqlite_version}")
    started = time.monotonic()
    loads: dict[str, Load] = {}
    wakes: dict[str, Wake] = {}
    systems: list[System] = []
    pg_problem = "skipped with --skip-postgres"
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="signoff-http-",
                                                                   dir=directory)))
        pg: PgDatabase | None = None
        if pg_dsn is not None:
            pg, pg_problem = create_pg_database(pg_dsn)
            if pg is not None:
                stack.callback(pg.drop)
                print(f"  postgres  {pg.version} at {redact(pg_dsn)}, own database {pg.name} "
                      f"(dropped after); {pg.settings}")
            else:
                print(f"  postgres  SKIPPED: not reachable at {redact(pg_dsn)} ({pg_problem})")
        else:
            print(f"  postgres  SKIPPED ({pg_problem})")
        print(f"  load      {plan.clients} client threads in this process, one httpx.Client "
              f"(keep-alive) each, {plan.rounds} rounds × {plan.per_client} timed decisions "
              f"per client (+{WARMUP_PER_CLIENT} warm-up), systems taking turns")
        print(f"  wake      {plan.pairs} agent/approver pairs, {plan.rounds} rounds × "
              f"{plan.per_pair} samples per pair (+{WAKE_WARMUP} warm-up); the approver "
              f"decides {plan.head_start * 1000:.0f} ms after the agent's long-poll is sent")
        print(f"  storage   {tmp}")
        print(flush=True)
        root = tmp / "workspace"
        root.mkdir()
        policy_path = tmp / "signoff.toml"
        policy_path.write_text(POLICY.format(root=root))
        systems += run_sqlite(tmp, policy_path, plan, loads, wakes)
        if pg is not None:
            systems += run_postgres(tmp, policy_path, plan, pg, loads=loads, wakes=wakes)
    report(systems, loads, wakes, plan=plan,
           pg_skipped=None if pg is not None else pg_problem,
           elapsed=time.monotonic() - started)
    return 0


def note(text: str) -> None:
    print(textwrap.fill(text, width=100))


def report(systems: Sequence[System], loads: dict[str, Load], wakes: dict[str, Wake], *,
           plan: Plan, pg_skipped: str | None, elapsed: float) -> None:
    floors = {s.backend: s for s in systems if s.floor}
    nw = max(len(s.name) for s in systems)
    bw = max(len("2 × PostgreSQL"), *(len(s.backend) for s in systems))
    skipped = (f"{'signoff serve':<{nw}} {'2 × PostgreSQL':<{bw}} SKIPPED: {pg_skipped}"
               if pg_skipped is not None else None)

    print(f"Decisions: {plan.clients} concurrent clients, each approving distinct pending "
          f"requests ({plan.rounds * plan.clients * plan.per_client} timed decisions per row)")
    header = (f"{'system':<{nw}} {'servers':<{bw}} {'dec/s':>6} {'p50 ms':>7} {'p99 ms':>8} "
              f"{'mean ms':>7}  {'÷ floor: dec/s':>14} {'p50':>6} {'p99':>6}  "
              f"{'CPU: servers':>12} {'client':>6}")
    print(header)
    print("-" * len(header))
    for system in systems:
        load = loads[system.key]
        floor = loads[floors[system.backend].key]
        seconds = load.wall / 1e9
        print(f"{system.name:<{nw}} {system.backend:<{bw}} {load.rate:>6.0f} "
              f"{load.ms(0.5):>7.2f} {load.ms(0.99):>8.2f} {load.mean_ms:>7.2f}  "
              f"{load.rate / floor.rate:>13.2f}× {load.ms(0.5) / floor.ms(0.5):>5.2f}× "
              f"{load.ms(0.99) / floor.ms(0.99):>5.2f}×  "
              f"{load.server_cpu / seconds:>12.2f} {load.client_cpu / seconds:>6.2f}")
    if skipped:
        print(skipped)
    print()
    note("dec/s = timed decisions ÷ the rounds' wall time (all clients released together, "
         "until the last one finished). p50/p99/mean: one decision's HTTP round trip as its "
         "client saw it (nearest rank). The clients are closed-loop, so the mean is about "
         "clients ÷ dec/s; a p50 far below the mean means some requests wait much longer "
         "than others. ÷ floor = this row ÷ the floor row on the same servers: for dec/s "
         "below 1× is slower, for latency above 1× is slower. CPU = CPU seconds ÷ wall "
         "seconds, in cores: the system's server processes together, and this (client) "
         "process; PostgreSQL's own processes are not counted.")
    print()

    print(f"Decision → wake: an agent long-polls (?wait={LONG_POLL}), an approver decides; "
          f"{plan.pairs} pairs at once ({plan.rounds * plan.pairs * plan.per_pair} samples "
          f"per row); ms")
    header = (f"{'system':<{nw}} {'servers':<{bw}} {'wait/decide on':<14} "
              f"{'resp→wake p50':>13} {'p99':>6} {'sent→wake p50':>13} {'p99':>7} "
              f"{'decide p50':>10}  {'÷ floor: p50':>12} {'p99':>6}")
    print(header)
    print("-" * len(header))
    for system in systems:
        wake = wakes[system.key]
        floor = wakes[floors[system.backend].key]
        where = "same server" if len(system.servers) == 1 else "other server"
        print(f"{system.name:<{nw}} {system.backend:<{bw}} {where:<14} "
              f"{wake.ms(wake.after_response, 0.5):>13.2f} "
              f"{wake.ms(wake.after_response, 0.99):>6.2f} "
              f"{wake.ms(wake.after_send, 0.5):>13.2f} {wake.ms(wake.after_send, 0.99):>7.2f} "
              f"{wake.ms(wake.decide, 0.5):>10.2f}  "
              f"{wake.ms(wake.after_send, 0.5) / floor.ms(floor.after_send, 0.5):>11.2f}× "
              f"{wake.ms(wake.after_send, 0.99) / floor.ms(floor.after_send, 0.99):>5.2f}×"
              + (f"  ({wake.early} dropped: answered early)" if wake.early else ""))
    if skipped:
        print(skipped)
    print()
    note("resp→wake = the agent's answer arrived this long after the approver's decision "
         "answer (negative: before it). sent→wake = from the decision request being sent to "
         "the agent's answer. decide = the decision's own round trip. ÷ floor compares "
         "sent→wake with the floor's on the same servers. On one server the agent and the "
         "approver use the same server; on two, the agent waits on one and the approver "
         "decides on the other (half the pairs each way).")
    print(f"\nfinished in {elapsed:.0f} s; load average now {_load()}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a short run (a smoke check)")
    parser.add_argument("--requests", type=int,
                        help="timed decisions per system (default 4,000; 640 with --quick)")
    parser.add_argument("--clients", type=int, default=32,
                        help="concurrent approving clients (default %(default)s)")
    parser.add_argument("--rounds", type=int,
                        help="rounds the systems take turns in (default 4; 2 with --quick)")
    parser.add_argument("--wake-samples", type=int,
                        help="decision→wake samples per system (default 400; 64 with --quick)")
    parser.add_argument("--pairs", type=int, default=8,
                        help="concurrent agent/approver pairs in the wake run (default "
                        "%(default)s)")
    parser.add_argument("--head-start", type=float, default=0.05,
                        help="seconds between the agent's long-poll and the decision "
                        "(default %(default)s)")
    parser.add_argument("--pg", default=os.environ.get("SIGNOFF_BENCH_PG", DEFAULT_PG),
                        help="PostgreSQL DSN (default $SIGNOFF_BENCH_PG, else %(default)s); "
                        "the run creates a database of its own there and drops it after")
    parser.add_argument("--skip-postgres", action="store_true",
                        help="SQLite only")
    parser.add_argument("--dir", help="where the SQLite files go (default: a temp dir)")
    args = parser.parse_args(argv)
    # A terminated run still stops its servers and drops its database (ExitStack unwinds).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rounds = args.rounds or (2 if args.quick else 4)
    plan = Plan(requests=args.requests or (640 if args.quick else 4000), clients=args.clients,
                rounds=rounds, wake_samples=args.wake_samples or (64 if args.quick else 400),
                pairs=args.pairs, head_start=args.head_start)
    if plan.clients < 1 or plan.pairs < 1 or plan.rounds < 1:
        parser.error("--clients, --pairs and --rounds must be at least 1")
    return run(plan, None if args.skip_postgres else args.pg, args.dir)


if __name__ == "__main__":
    raise SystemExit(main())
