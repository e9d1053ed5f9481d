"""Crashes: a child process SIGKILLs itself at each named point, then the parent recovers.

Points (``tests/kernel/_worker.py``, mode ``crash``): the child proposes, approves and
resumes one ``execute`` call, and dies

* ``after_insert``   — the request is committed, nobody has decided;
* ``after_decision`` — the approval is committed, nothing has run;
* ``after_claim``    — ``approved → executing`` is committed, the tool has not run;
* ``in_tool``        — inside the tool, after its side effect (the ledger line);
* ``before_result``  — the tool returned, its result was never recorded.

After each death the parent waits out the child's lease (0.2 s) and runs ``recover()``
with the tool registered; on alternate iterations the tool has a ``verify`` hook that
reads the ledger, and on alternate pairs a gate *without* the tool recovers first.
Invariants, checked after every crash:

* never two executions: at most one ledger line per request, ever — not after
  ``recover()``, a second ``recover()``, ``resume()`` or ``execute()``;
* no approved request silently lost: it ends ``succeeded`` through ``recover()``, or —
  when the recovering process has no tool for it — stays ``approved`` and is counted in
  ``left_approved``; a request that died pending is still there to be decided;
* a mid-call crash ends ``unknown`` (``lease_expired``) unless ``verify`` settles it
  (``succeeded`` when the ledger has the line, ``failed`` when it does not);
* the audit chain verifies, and shows at most one ``request.executing`` per request.

Each point runs ``ITERATIONS`` times per backend, spread over ``LANES`` independent
databases so the children's start-up overlaps.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _worker import (
    CRASH_POINTS,
    Children,
    Site,
    build_gate,
    crash_child,
    execute_call,
    ledger_lines,
    make_site,
    race,
)

from kit import KERNEL_POLICY, make_store
from signoff.audit import verify
from signoff.errors import SignoffError
from signoff.identity import Identity
from signoff.kernel.execution import Hooks
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind
from signoff.model import Decision, RequestStatus, RunContext
from signoff.store.base import Store

# Children killed mid-step and recovered, many seconds each: CI's full run (`-m slow`).
pytestmark = pytest.mark.slow

ITERATIONS = 20
LANES = 4
LEASE = 0.2

S = RequestStatus
STATUS_AT_DEATH = {"after_insert": S.PENDING, "after_decision": S.APPROVED,
                   "after_claim": S.EXECUTING, "in_tool": S.EXECUTING,
                   "before_result": S.EXECUTING}
SIDE_EFFECT_DONE = frozenset({"in_tool", "before_result"})
MID_CALL = frozenset({"after_claim", "in_tool", "before_result"})
OUTCOME_OF = {S.SUCCEEDED: OutcomeKind.EXECUTED, S.FAILED: OutcomeKind.FAILED,
              S.UNKNOWN: OutcomeKind.UNKNOWN}


@dataclass
class Lane:
    """One database, its ledger, and the parent's gates on it."""

    site: Site
    store: Store
    with_verify: Gate
    without_verify: Gate
    bare: Gate  # no tools registered: cannot run anything
    approver: Identity
    token: str

    def count(self, request_id: str) -> int:
        return ledger_lines(self.site.ledger).count(request_id)

    def get(self, request_id: str) -> S:
        request = self.store.get_request(request_id)
        assert request is not None
        return request.status


def make_lane(backend: str, directory: Path, workspace: Path, stores: list[Store]) -> Lane:
    directory.mkdir()
    store = make_store(backend, directory)
    stores.append(store)
    site = make_site(store, directory, KERNEL_POLICY.format(root=workspace))
    bare = build_gate(site, store=store, tools=False)
    approver, token = bare.add_user("approver")
    return Lane(site=site, store=store, with_verify=build_gate(site, store=store, verify=True),
                without_verify=build_gate(site, store=store), bare=bare, approver=approver,
                token=token)


@pytest.fixture
def lanes(backend: str, tmp_path: Path, workspace: Path) -> Iterator[list[Lane]]:
    """``LANES`` independent databases (each with its own ledger)."""
    stores: list[Store] = []
    try:
        yield [make_lane(backend, tmp_path / f"lane{n}", workspace, stores)
               for n in range(LANES)]
    finally:
        for store in stores:
            store.close()
            drop = getattr(store, "drop_schema", None)
            if drop is not None:
                drop()


@pytest.fixture
def lane(lanes: list[Lane]) -> Lane:
    return lanes[0]


def crash_and_recover(lane: Lane, point: str, iteration: int) -> None:
    thread_id = f"{point}-{iteration}"
    child = crash_child(lane.site, point=point, thread_id=thread_id,
                        call_id=f"call-{iteration}", token=lane.token, lease=LEASE)
    assert child.returncode == -signal.SIGKILL, (child.returncode, child.stdout, child.stderr)

    # What the crash left behind.
    [request] = lane.store.list_requests(thread_id=thread_id)
    rid = request.id
    ran = 1 if point in SIDE_EFFECT_DONE else 0
    assert request.status is STATUS_AT_DEATH[point]
    assert lane.count(rid) == ran
    if request.status is S.EXECUTING:
        assert request.lease_until is not None
        time.sleep(max(0.0, request.lease_until - time.time()) + 0.02)

    verifying = iteration % 2 == 1
    bare_first = (iteration // 2) % 2 == 1
    gate = lane.with_verify if verifying else lane.without_verify

    if bare_first:  # a process that cannot run the tool recovers first
        report = lane.bare.recover()
        if point == "after_decision":
            assert lane.get(rid) is S.APPROVED  # still there, and counted
            assert (report.left_approved, report.executed) == (1, 0), report
        elif point == "after_insert":
            assert lane.get(rid) is S.PENDING
            assert report.to_dict() == dict.fromkeys(report.to_dict(), 0), report
        else:
            assert lane.get(rid) is S.UNKNOWN
            assert (report.unknown, report.settled) == (1, 0), report
        assert lane.count(rid) == ran

    report = gate.recover()
    if point == "after_insert":  # pending survives; once approved, recover runs it
        assert lane.get(rid) is S.PENDING and report.executed == 0
        assert lane.count(rid) == 0
        # The restarted agent proposes the same call again: the same request, not a second.
        again = gate.propose(execute_call(f"call-{iteration}"), RunContext(thread_id=thread_id))
        assert again.request is not None and again.request.id == rid
        assert len(lane.store.list_requests(thread_id=thread_id)) == 1
        gate.decide(rid, Decision.approve(), identity=lane.approver)
        report = gate.recover()
        assert report.executed == 1, report
        expected = S.SUCCEEDED
    elif point == "after_decision":
        assert report.executed == 1, report
        expected = S.SUCCEEDED
    elif verifying:  # verify reads the ledger: it happened, or it did not
        assert report.settled == 1, report
        expected = S.SUCCEEDED if ran else S.FAILED
    else:
        assert report.settled == 0, report
        assert report.unknown == (0 if bare_first else 1), report
        expected = S.UNKNOWN
    assert report.executed <= 1 and report.left_approved == 0, report
    final = lane.store.get_request(rid)
    assert final is not None and final.status is expected, (point, final.status, expected)
    if point in MID_CALL:
        if expected is S.UNKNOWN:
            assert final.outcome_code == "lease_expired"
        else:
            assert final.outcome_code == "reconciled"
        assert lane.count(rid) == ran  # a dead run is never re-run
    else:
        assert lane.count(rid) == 1

    # Nothing runs it again: not recover, not resume, not execute.
    lines = lane.count(rid)
    for _ in range(2):
        again = gate.recover()
        assert again.executed == 0 and again.unknown == 0, again
        assert gate.resume(rid).kind is OUTCOME_OF[expected]
        assert gate.execute(rid).kind is OUTCOME_OF[expected]
    assert lane.get(rid) is expected
    assert lane.count(rid) == lines

    if expected is S.UNKNOWN:  # only a human (or verify) reconciles it
        assert gate.settle(rid, succeeded=bool(ran), actor="operator", note="checked by hand")
        assert lane.get(rid) is (S.SUCCEEDED if ran else S.FAILED)
        assert not gate.settle(rid, succeeded=True, actor="operator", note="twice")

    kinds = [e.kind for e in lane.store.audit_events() if e.request_id == rid]
    assert kinds.count("request.executing") <= 1, kinds
    assert kinds.count("request.approved") == 1, kinds
    verification = verify(lane.store.audit_events())
    assert verification.ok, verification


def run_lane(lane: Lane, point: str, iterations: list[int]) -> None:
    for iteration in iterations:
        crash_and_recover(lane, point, iteration)
    counts = Counter(ledger_lines(lane.site.ledger))
    assert not counts or max(counts.values()) == 1, counts
    assert lane.store.list_requests(status=S.APPROVED) == []
    assert lane.store.list_requests(status=S.EXECUTING) == []
    assert lane.store.list_requests(status=S.UNKNOWN) == []


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_sigkill_then_recover(lanes: list[Lane], point: str) -> None:
    plan = [list(range(n, ITERATIONS, LANES)) for n in range(LANES)]
    assert sum(len(p) for p in plan) == ITERATIONS
    with ThreadPoolExecutor(LANES) as pool:
        for done in [pool.submit(run_lane, lane, point, iterations)
                     for lane, iterations in zip(lanes, plan, strict=True)]:
            done.result()


# ---- several recoverers at once --------------------------------------------------------------

MIX = {"after_decision": 3, "after_claim": 3, "in_tool": 3, "before_result": 3}
RECOVERERS = 4


def crash_many(lane: Lane, prefix: str) -> dict[str, str]:
    """Kill one child at each point of ``MIX``; return request id → point."""
    jobs = [(point, f"{prefix}-{point}-{k}") for point, n in MIX.items() for k in range(n)]
    with ThreadPoolExecutor(LANES) as pool:
        children = list(pool.map(
            lambda job: crash_child(lane.site, point=job[0], thread_id=job[1], call_id=job[1],
                                    token=lane.token, lease=LEASE), jobs))
    assert [c.returncode for c in children] == [-signal.SIGKILL] * len(jobs), \
        [c.stderr for c in children if c.returncode != -signal.SIGKILL]
    points: dict[str, str] = {}
    leases = [0.0]
    for point, thread_id in jobs:
        [request] = lane.store.list_requests(thread_id=thread_id)
        assert request.status is STATUS_AT_DEATH[point]
        points[request.id] = point
        leases.append(request.lease_until or 0.0)
    time.sleep(max(0.0, max(leases) - time.time()) + 0.02)
    return points


def recover_safely(gate: Gate, site: Site) -> dict[str, Any]:
    try:
        report = gate.recover()
    except SignoffError as exc:
        return {"ok": False, "code": exc.code, "error": f"{type(exc).__name__}: {exc}",
                "ran_ids": site.calls}
    return {"ok": True, **report.to_dict(), "ran_ids": site.calls}


@pytest.mark.parametrize("how", ["threads", "processes"])
def test_recover_from_several_processes_at_once(lane: Lane, how: str, backend: str,
                                                request: pytest.FixtureRequest) -> None:
    """Several servers restart after the same crash and all run ``recover()`` at once:
    each dead run becomes ``unknown`` exactly once (or is settled by ``verify``), each
    approved-but-unstarted request runs exactly once, and no recoverer fails."""
    points = crash_many(lane, how)
    verifying = how == "processes"
    if how == "threads":
        sites = [Site(where=lane.site.where, policy=lane.site.policy, ledger=lane.site.ledger)
                 for _ in range(RECOVERERS)]
        gates = [build_gate(s, store=lane.store, verify=verifying) for s in sites]
        reports = race(RECOVERERS, lambda i: recover_safely(gates[i], sites[i]))
    else:
        config = {**lane.site.to_json(), "verify": verifying}
        with Children("recover", [config] * RECOVERERS) as kids:
            reports = kids.step()

    ledger = Counter(ledger_lines(lane.site.ledger))
    assert not ledger or max(ledger.values()) == 1, ledger
    for rid, point in points.items():
        kinds = [e.kind for e in lane.store.audit_events() if e.request_id == rid]
        assert kinds.count("request.executing") == 1, kinds
        if point == "after_decision":
            assert lane.get(rid) is S.SUCCEEDED and ledger[rid] == 1
        else:
            assert kinds.count("request.unknown") == 1, kinds
            ran = 1 if point in SIDE_EFFECT_DONE else 0
            assert ledger[rid] == ran
            if verifying:
                assert lane.get(rid) is (S.SUCCEEDED if ran else S.FAILED)
            else:
                assert lane.get(rid) is S.UNKNOWN
    assert all(r["ok"] for r in reports), [r for r in reports if not r["ok"]]
    approved = sorted(rid for rid, point in points.items() if point == "after_decision")
    assert sorted(rid for r in reports for rid in r["ran_ids"]) == approved
    assert sum(r["unknown"] for r in reports) == len(points) - len(approved)
    verification = verify(lane.store.audit_events())
    assert verification.ok, verification


def test_recovery_report_counts_only_the_runs_it_made(lane: Lane) -> None:
    """Deterministic interleaving: while ``recover()`` runs the first of two approved
    requests, another executor runs the second; the report must say it ran one."""
    first, second = (lane.bare.propose(execute_call(f"report-{n}")).request for n in (1, 2))
    assert first is not None and second is not None
    for pending in (first, second):
        lane.bare.decide(pending.id, Decision.approve(), identity=lane.approver)
    other = build_gate(lane.site, store=lane.store)
    overtaken: list[OutcomeKind] = []

    def run_second_elsewhere(request_id: str) -> None:
        if request_id == first.id and not overtaken:
            overtaken.append(other.execute(second.id).kind)

    recovering = build_gate(Site(where=lane.site.where, policy=lane.site.policy,
                                 ledger=lane.site.ledger), store=lane.store,
                            hooks=Hooks(after_claim=run_second_elsewhere))
    report = recovering.recover()

    assert overtaken == [OutcomeKind.EXECUTED]
    assert sorted(ledger_lines(lane.site.ledger)) == sorted([first.id, second.id])
    assert lane.get(first.id) is S.SUCCEEDED and lane.get(second.id) is S.SUCCEEDED
    assert report.executed == 1, report
