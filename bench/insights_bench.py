"""``signoff insights`` over a million requests in SQLite: wall time and peak memory of the
Gate method and of the CLI, beside the floor of one plain ``GROUP BY`` scan.

The history is built from rows a real gate wrote: a dozen calls are proposed through a
``Gate`` (every way a request is asked: ask rules, a mandatory rule, a gated tool, an
unknown tool, a shell concern) and decided, and those requests and decisions are the
templates. A million copies, with their own ids, threads, times, arguments (a pool per
template, so asks repeat), statuses and decisions, are written through the store's own
``insert_request`` / ``insert_decision``, and one verdict event per request
(``call.allowed`` / ``call.denied`` with its rules, as the gate audits them) through its
``append_audits``; the lifecycle events insights does not read are left out.

    .venv/bin/python bench/insights_bench.py                 # 1,000,000 requests
    .venv/bin/python bench/insights_bench.py --rows 100000   # a smaller check
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import expect, version
from signoff.canonical import args_hash, canonical_text
from signoff.decisions import Decision, DecisionKind, DecisionRecord
from signoff.kernel.gate import Gate
from signoff.model import ApprovalRequest, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.sqlite import SqliteStore

POLICY = """
[policy]
version = "bench-insights"
gated = ["execute", "deploy"]
unknown_tools = "ask"

[tools.execute]
shell = "command"
[tools.deploy]

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "allow-ls"
effect = "allow"
tool = "execute"
command = "ls *"

[[rules]]
id = "ask-push"
effect = "ask"
tool = "execute"
command = "git push *"

[[rules]]
id = "ask-npm"
effect = "ask"
tool = "execute"
command = "npm publish *"

[[rules]]
id = "deploy-prod"
effect = "ask"
mandatory = true
tool = "deploy"
roles = ["ops"]

[[rules]]
id = "never-used"
effect = "ask"
tool = "execute"
command = "terraform apply *"
"""

# Calls whose requests are the templates: (tool, arguments with {n} for the pool's variant).
CALLS = (
    ("execute", {"command": "git push origin b{n}"}),
    ("execute", {"command": "npm publish --tag t{n}"}),
    ("execute", {"command": "make target{n}"}),
    ("execute", {"command": "pytest tests/t{n}.py"}),
    ("execute", {"command": "sudo apt-get install p{n}"}),
    ("deploy", {"env": "prod", "build": "{n}"}),
    ("fetch_url", {"url": "https://example.com/{n}"}),
    ("send_mail", {"to": "x{n}@example.com"}),
)
# What became of each request, with its weight: a status and the decision that made it.
FATES = ((RequestStatus.SUCCEEDED, DecisionKind.APPROVE, 60),
         (RequestStatus.SUCCEEDED, DecisionKind.EDIT, 5),
         (RequestStatus.REJECTED, DecisionKind.REJECT, 12),
         (RequestStatus.RESPONDED, DecisionKind.RESPOND, 3),
         (RequestStatus.EXPIRED, None, 8),
         (RequestStatus.CANCELLED, None, 2),
         (RequestStatus.PENDING, None, 10))
DAY = 86_400.0
T0 = 1_767_225_600.0  # 2026-01-01 UTC


def templates(where: Path) -> tuple[list[ApprovalRequest], dict[DecisionKind, DecisionRecord]]:
    """Requests and decisions a real gate wrote for ``CALLS`` (one of each kind)."""
    store = SqliteStore(where / "templates.db")
    gate = Gate(Policy.from_toml(POLICY, source="bench.toml"), store, verdict_audit="sync")
    approver, _ = gate.add_user("ann", roles=["ops"])
    made = []
    for number, (tool, args) in enumerate(CALLS):
        filled = {k: v.format(n=0) for k, v in args.items()}
        proposal = gate.propose(ToolCall(id=f"c{number}", name=tool, args=filled),
                                RunContext(thread_id="t0", principal="bot"))
        expect(proposal.request is not None, f"{tool} {filled} did not ask")
        assert proposal.request is not None
        made.append(proposal.request.id)
    decisions = {}
    for request_id, decision in zip(made, (
            Decision.approve(), Decision.reject("not now"),
            Decision.edit({"command": "npm publish --dry-run"}, reason="dry run first"),
            Decision.respond("use the staging box")), strict=False):
        gate.decide(request_id, decision, identity=approver)
        decisions[decision.kind] = gate.decisions(request_id)[0]
    requests = [gate.request(request_id) for request_id in made]
    gate.close()
    return requests, decisions


def seed(path: Path, rows: int, *, threads: int = 5000, days: int = 90, pool: int = 2000,
         seed_value: int = 48) -> None:
    """``rows`` requests, their decisions and one verdict event each."""
    rng = random.Random(seed_value)
    requests, decisions = templates(path.parent)
    variants = []
    for template, (_, args) in zip(requests, CALLS, strict=True):
        own = []
        for n in range(pool):
            filled = {k: v.format(n=n) for k, v in args.items()}
            own.append((canonical_text(filled), args_hash(filled)))
        variants.append((template, own))
    weights = [w for *_, w in FATES]
    store = SqliteStore(path, synchronous="NORMAL")
    batch = 20_000
    for start in range(0, rows, batch):
        with store.transaction() as tx:
            events = []
            for n in range(start, min(rows, start + batch)):
                template, own = variants[n % len(variants)]
                text, digest = own[min(pool - 1, int(rng.paretovariate(1.2)) - 1)]
                status, kind, _ = rng.choices(FATES, weights)[0]
                created = T0 + rng.random() * days * DAY
                waited = rng.lognormvariate(4.5, 1.5)  # seconds: a median of 90 s
                request = dataclasses.replace(
                    template, id=f"req_{n:032x}", call_id=f"c{n}", args=text,
                    args_hash=digest, thread_id=f"t{rng.randrange(threads)}",
                    run_id=f"run{n // 7}", created_at=created,
                    updated_at=created + waited, expires_at=created + 3600, status=status,
                    version=2 if kind else 0, outcome_code=kind.value if kind else None)
                tx.insert_request(request)
                if kind is not None:
                    tx.insert_decision(dataclasses.replace(
                        decisions[kind], id=f"dec_{n:032x}", request_id=request.id,
                        created_at=created + waited,
                        args_hash=digest if kind is DecisionKind.APPROVE
                        else decisions[kind].args_hash))
                allowed = n % 3 != 0
                events.append(("call.allowed" if allowed else "call.denied",
                               int(created * 1e6), "bot", {
                                   "tool": "execute", "call_id": f"a{n}", "args_hash": None,
                                   "code": "rule_allow" if allowed else "rule_deny",
                                   "source": "policy", "risk": "low" if allowed else "critical",
                                   "policy_version": "bench-insights",
                                   "decision_id": f"dec_v{n}", "thread_id": request.thread_id,
                                   "run_id": request.run_id,
                                   "rules": ["allow-ls"] if allowed else ["no-rm"]}))
            tx.append_audits(events)
    store.close()


# Each child prints what it found, its wall time (s) and its peak RSS (KiB), last.
GATE = """
import resource, sys, time
from signoff.kernel.gate import Gate
from signoff.policy import Policy
from signoff.store.sqlite import SqliteStore
gate = Gate(Policy.load(sys.argv[2]), SqliteStore(sys.argv[1]))
started = time.perf_counter()
found = gate.insights()
took = time.perf_counter() - started
print(found.asks, took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
CLI = """
import contextlib, io, resource, sys, time
from signoff.cli import main
out = io.StringIO()
started = time.perf_counter()
with contextlib.redirect_stdout(out):
    code = main(["insights", "--db", sys.argv[1], "--policy", sys.argv[2], "--json"])
took = time.perf_counter() - started
assert code == 0, out.getvalue()
print(len(out.getvalue()), took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
FLOOR = """
import resource, sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1])
started = time.perf_counter()
rows = conn.execute("SELECT tool, status, COUNT(*) FROM requests GROUP BY tool, status").fetchall()
took = time.perf_counter() - started
print(len(rows), took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def measure(script: str, db: Path, policy: Path) -> tuple[str, float, int]:
    """What the child printed: its answer's size, its wall time (s), its peak RSS (MiB)."""
    done = subprocess.run([sys.executable, "-c", script, str(db), str(policy)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr.strip()[-2000:])
    said, took, peak = done.stdout.strip().splitlines()[-1].rsplit(" ", 2)
    return said, float(took), int(peak) // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", help="keep the database here (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(args.dir or scratch)
        db = where / "insights.db"
        policy = where / "signoff.toml"
        policy.write_text(POLICY)
        started = time.monotonic()
        if not db.exists():
            seed(db, args.rows)
        seeded = time.monotonic() - started
        print(f"# insights_bench: {args.rows:,} requests seeded in {seeded:.0f} s "
              f"({db.stat().st_size / 2**20:.0f} MiB); signoff {version('signoff')}, SQLite "
              f"{sqlite3.sqlite_version}, Python {sys.version.split()[0]}; "
              f"best of {args.runs} runs, each in a fresh process; targets < 5 s, < 300 MiB")
        print(f"{'what':<34}{'wall s':>8}{'peak RSS MiB':>14}")
        for name, script in (("floor: GROUP BY tool, status", FLOOR),
                             ("Gate.insights()", GATE),
                             ("signoff insights --json", CLI)):
            runs = [measure(script, db, policy) for _ in range(args.runs)]
            best = min(runs, key=lambda run: run[1])
            print(f"{name:<34}{best[1]:>8.2f}{max(run[2] for run in runs):>14}")


if __name__ == "__main__":
    main()
