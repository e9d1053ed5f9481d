"""Scale: decisions/s and allowed calls/s with 32 and 128 clients, on 1 × SQLite,
1 × PostgreSQL and 2 × PostgreSQL servers, each beside the FastAPI floor on the same
servers, measured in the same run.

    .venv/bin/python bench/scale_bench.py              # full run (about 5 minutes)
    .venv/bin/python bench/scale_bench.py --quick      # a smoke check
    .venv/bin/python bench/scale_bench.py --skip-postgres
    .venv/bin/python bench/scale_bench.py --servers 2pg --workloads decisions

Decisions are ``http_bench.py``'s: each client approves distinct pending requests that
were proposed before the servers started. An allowed call is an agent's ``POST
/api/v1/calls`` of a call the policy allows (a rule), each with a new call id and one
thread per client: signoff judges it and audits it (``call.allowed``, batched by the
verdict log). The floor's ``POST /calls`` records the call, one committed INSERT, and
judges nothing. Decisions have a third system, the audited floor: the floor writing the
rows signoff's decision writes, and nothing else. Clients are spread over a
configuration's servers. The systems take turns in rounds, so a noisy moment lands on
all of them.

Read the ratios, not the rates: on a machine with few cores, the client threads, the
servers and PostgreSQL share them, and a second server adds capacity only if there is a
core to run it. The floor's own 2 × ÷ 1 × ratio is that ceiling, printed beside
signoff's.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from _postgres import backend_cpu
from http_bench import (
    POLICY,
    WARMUP_PER_CLIENT,
    FloorSystem,
    Load,
    PgDatabase,
    SignoffSystem,
    System,
    _load,
    _url,
    create_pg_database,
    floor_ids,
    load_round,
    note,
    peer_serve,
    seed_floor_pg,
    seed_floor_sqlite,
    seed_signoff,
    signoff_serve,
)
from signoff import Policy

CALLS_POLICY = POLICY + """
[tools.status]

[[rules]]
id = "status-is-fine"
effect = "allow"
tool = "status"
"""


class SignoffCalls(SignoffSystem):
    """Allowed calls: ``take`` makes call ids (nothing is seeded), the agent posts them."""

    def take(self, n: int) -> list[str]:
        return [f"c-{uuid.uuid4().hex}" for _ in range(n)]

    def decider_headers(self, client: int) -> dict[str, str]:
        return self.waiter_headers()

    def decision(self, request_id: str, client: int) -> tuple[str, dict[str, Any]]:
        return "/api/v1/calls", {"tool": "status", "args": {"service": "web"},
                                 "call_id": request_id,
                                 "context": {"thread_id": f"scale-{client}"}}

    def decided(self, answer: dict[str, Any]) -> bool:
        return answer.get("status") == "allowed"


class FloorCalls(FloorSystem):
    def take(self, n: int) -> list[str]:
        return [f"c-{uuid.uuid4().hex}" for _ in range(n)]

    def decision(self, request_id: str, client: int) -> tuple[str, dict[str, Any]]:
        return "/calls", {"tool": "status", "args": {"service": "web"}, "call_id": request_id}

    def decided(self, answer: dict[str, Any]) -> bool:
        return answer.get("status") == "allowed"


class AuditedFloor(FloorSystem):
    """The floor writing the rows signoff's decision writes (``_http_peer.py``)."""

    name = "audited floor"

    def decision(self, request_id: str, client: int) -> tuple[str, dict[str, Any]]:
        return f"/approvals/{request_id}/audited-decision", {"kind": "approve",
                                                             "by": f"approver-{client:02d}"}


WORKLOADS = ("decisions", "allowed calls")
CONFIGS = ("sqlite", "pg", "2pg")  # 1 × SQLite, 1 × PostgreSQL, 2 × PostgreSQL


class Plan:
    def __init__(self, timed: int, clients: Sequence[int], rounds: int,
                 workloads: Sequence[str] = WORKLOADS) -> None:
        self.timed, self.clients, self.rounds = timed, tuple(clients), rounds
        self.workloads = tuple(workloads)

    def per_client(self, clients: int) -> int:
        return max(1, self.timed // (clients * self.rounds))

    def needed(self) -> int:
        """Pending requests one configuration's decisions use (a margin for rounding)."""
        return sum(self.rounds * c * (WARMUP_PER_CLIENT + self.per_client(c))
                   for c in self.clients) + 16


Row = tuple[str, str, int, str]  # configuration, workload, clients, system key


def measure(config: str, systems: dict[str, list[System]], plan: Plan,
            loads: dict[Row, Load], *, backends: Callable[[], dict[int, float]] | None = None,
            ) -> None:
    for clients in plan.clients:
        for workload in plan.workloads:
            pair = systems[workload]
            for r in range(plan.rounds):
                for system in pair[r % len(pair):] + pair[:r % len(pair)]:
                    load_round(system, clients, plan.per_client(clients),
                               loads.setdefault((config, workload, clients, system.key), Load()),
                               backends=backends)
            print(f"  {config:<16} {workload:<14} {clients:>4} clients: "
                  + ", ".join(f"{s.name} {loads[(config, workload, clients, s.key)].rate:.0f}/s"
                              for s in pair), flush=True)


def systems(config: str, sig: list[Any], peer: list[Any],
            pending: tuple[list[str], list[str], list[str]], *, approvers: list[str],
            agent: str) -> dict[str, list[System]]:
    """Each workload's systems on one configuration's servers (``pending``: the seeded
    ids of signoff, the floor and the audited floor)."""
    ids, fids, aids = pending
    return {
        "decisions": [SignoffSystem("signoff", config, sig, ids, approvers=approvers,
                                    agent=agent), FloorSystem("floor", config, peer, fids),
                      AuditedFloor("audited", config, peer, aids)],
        "allowed calls": [SignoffCalls("signoff", config, sig, [], approvers=approvers,
                                       agent=agent), FloorCalls("floor", config, peer, [])],
    }


def run_sqlite(tmp: Path, policy_path: Path, plan: Plan, loads: dict[Row, Load]) -> None:
    from signoff.store.sqlite import SqliteStore

    db = tmp / "signoff.db"
    store = SqliteStore(db, synchronous="NORMAL")  # seeding only; the server uses FULL
    ids, approvers, agent = seed_signoff(store, Policy.load(policy_path), plan.needed(),
                                         max(plan.clients))
    store.close()
    floor_db = tmp / "floor.db"
    fids, aids = floor_ids(plan.needed()), floor_ids(plan.needed())
    seed_floor_sqlite(floor_db, fids + aids)
    with ExitStack() as stack:
        sig = [stack.enter_context(signoff_serve("signoff-sqlite", str(db), policy_path, tmp))]
        peer = [stack.enter_context(peer_serve("floor-sqlite", str(floor_db), tmp))]
        config = "1 × SQLite"
        measure(config, systems(config, sig, peer, (ids, fids, aids), approvers=approvers,
                                agent=agent),
                plan, loads)


def run_postgres(tmp: Path, policy_path: Path, plan: Plan, pg: PgDatabase, *, servers: int,
                 loads: dict[Row, Load]) -> None:
    from psycopg.conninfo import make_conninfo

    from signoff.store.postgres import PostgresStore

    fast = make_conninfo(pg.dsn, options="-c synchronous_commit=off")  # seeding only
    store = PostgresStore(fast, setup=True)
    try:
        ids, approvers, agent = seed_signoff(store, Policy.load(policy_path), plan.needed(),
                                             max(plan.clients), threads=8)
    finally:
        store.close()
    fids, aids = floor_ids(plan.needed()), floor_ids(plan.needed())
    seed_floor_pg(pg.dsn, fids + aids)
    url = _url(pg.dsn)
    with ExitStack() as stack:
        names = "ab"[:servers]
        sig = [stack.enter_context(signoff_serve(f"signoff-pg-{n}", url, policy_path, tmp))
               for n in names]
        peer = [stack.enter_context(peer_serve(f"floor-pg-{n}", url, tmp)) for n in names]
        config = f"{servers} × PostgreSQL"
        measure(config, systems(config, sig, peer, (ids, fids, aids), approvers=approvers,
                                agent=agent),
                plan, loads, backends=lambda: backend_cpu(pg.admin_dsn, pg.name))


def cpu_ms(load: Load) -> str:
    """The servers' CPU (user + system) per timed request, in ms, and on PostgreSQL its
    backends' CPU for the same requests after a ``+``."""
    n = max(1, len(load.latencies))
    ours = f"{1000 * load.server_cpu / n:.2f}"
    return ours + (f"+{1000 * load.pg_cpu / n:.2f}" if load.pg_cpu else "")


def report(loads: dict[Row, Load], plan: Plan) -> None:
    configs = list(dict.fromkeys(row[0] for row in loads))
    print()
    header = (f"{'servers':<16} {'workload':<14} {'clients':>7} {'signoff/s':>9} "
              f"{'floor/s':>8} {'÷ floor':>8} {'p50 ms':>7} {'p99 ms':>8} {'p99÷p50':>7} "
              f"{'audited/s':>9} {'÷ floor':>8} {'cpu ms':>13}")
    print(header)
    print("-" * len(header))
    for config in configs:
        for workload in plan.workloads:
            for clients in plan.clients:
                ours = loads.get((config, workload, clients, "signoff"))
                floor = loads.get((config, workload, clients, "floor"))
                if ours is None or floor is None:
                    continue
                audited = loads.get((config, workload, clients, "audited"))
                extra = (" " * 18 if audited is None else
                         f" {audited.rate:>9.0f} {audited.rate / floor.rate:>7.2f}×")
                extra += " " + " / ".join(cpu_ms(load) for load in
                                          (ours, floor, audited) if load is not None)
                print(f"{config:<16} {workload:<14} {clients:>7} {ours.rate:>9.0f} "
                      f"{floor.rate:>8.0f} {ours.rate / floor.rate:>7.2f}× "
                      f"{ours.ms(0.5):>7.2f} {ours.ms(0.99):>8.2f} "
                      f"{ours.ms(0.99) / ours.ms(0.5):>7.1f}{extra}")
    if "1 × PostgreSQL" in configs and "2 × PostgreSQL" in configs:
        print()
        print("2 × PostgreSQL ÷ 1 × PostgreSQL (a second server's added capacity)")
        for workload in plan.workloads:
            for clients in plan.clients:
                cells = []
                for key in ("signoff", "floor"):
                    one = loads[("1 × PostgreSQL", workload, clients, key)].rate
                    two = loads[("2 × PostgreSQL", workload, clients, key)].rate
                    cells.append(f"{key} {two / one:.2f}×")
                print(f"  {workload:<14} {clients:>4} clients: {', '.join(cells)}")
    print()
    note("signoff/s and floor/s: timed requests ÷ the rounds' wall time, all clients released "
         "together. ÷ floor = signoff ÷ the floor on the same servers. p50/p99: one request's "
         "round trip as its client saw it (signoff). Decisions approve distinct pending "
         "requests; allowed calls are POST /api/v1/calls the policy allows by a rule. "
         "audited/s: the floor writing the rows signoff's decision writes (a decision row, "
         "the request row, two audit rows; no chain, no authentication, no policy), ÷ the "
         "plain floor: what the audit trail alone costs on these servers. cpu ms: the server "
         "processes' CPU per timed request (signoff / floor / audited floor), and after a + "
         "the PostgreSQL backends' CPU for the same requests (the database's sessions; the "
         "cluster's WAL writer and checkpointer not counted); on a machine whose cores are "
         "all busy, rates follow their sum.")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a short run (a smoke check)")
    parser.add_argument("--timed", type=int, help="timed requests per row (default 3,000; "
                        "600 with --quick)")
    parser.add_argument("--clients", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--rounds", type=int, help="rounds per row (default 3; 2 with --quick)")
    parser.add_argument("--pg", default=os.environ.get("SIGNOFF_BENCH_PG",
                                                       "postgresql://postgres@127.0.0.1:5432/"
                                                       "postgres"))
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--servers", choices=CONFIGS, nargs="+", default=list(CONFIGS),
                        help="which configurations to run (default: all three)")
    parser.add_argument("--workloads", choices=WORKLOADS, nargs="+", default=list(WORKLOADS))
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    plan = Plan(args.timed or (600 if args.quick else 3000), args.clients,
                args.rounds or (2 if args.quick else 3), args.workloads)
    started = time.monotonic()
    print(f"# scale_bench: {plan.timed} timed requests per row, {plan.rounds} rounds, "
          f"clients {list(plan.clients)}; {os.cpu_count()} CPUs, load average {_load()}")
    loads: dict[Row, Load] = {}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="signoff-scale-")))
        policy_path = tmp / "signoff.toml"
        (tmp / "workspace").mkdir()
        policy_path.write_text(CALLS_POLICY.format(root=tmp / "workspace"))
        if "sqlite" in args.servers:
            run_sqlite(tmp, policy_path, plan, loads)
        if not args.skip_postgres:
            # A database each: the same users are seeded in both.
            for servers in (n for n, key in ((1, "pg"), (2, "2pg")) if key in args.servers):
                pg, problem = create_pg_database(args.pg)
                if pg is None:
                    print(f"  PostgreSQL SKIPPED: {problem}")
                    break
                stack.callback(pg.drop)
                run_postgres(tmp, policy_path, plan, pg, servers=servers, loads=loads)
    report(loads, plan)
    print(f"\nfinished in {time.monotonic() - started:.0f} s; load average now {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
