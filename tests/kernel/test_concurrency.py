"""Races on one request, on both backends, with real threads and real processes.

The oracle is a ledger file the tools append to (``O_APPEND`` + ``fsync``): a line is a
side effect that happened. The audit log must show exactly the transitions that
happened, and its chain must verify.

* 32 distinct approvers race to approve one quorum-1 request: one transition, one
  execution, 31 ``already_decided``. Distinct identities make it a race between
  *decisions* (one identity racing itself is a different rule: ``already_voted``, tested
  below), so this is the reading that proves "one transition".
* 16 approves race 16 rejects, on quorum 1 (``execute``) and quorum 2 (``deploy``):
  one final outcome, executed only if approved.
* Quorum 2, ten approvals by one identity: counted once; nine ``already_voted``.
* 8 executor processes over 1,000 approved requests: each executed exactly once.

Processes are fresh interpreters (``tests/kernel/_worker.py``) each opening its own store;
a READY/GO handshake on their pipes releases them together.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _worker import (
    Children,
    Site,
    build_gate,
    deploy_call,
    execute_call,
    ledger_lines,
    make_site,
    many_connections,
    open_store,
    race,
)

from kit import KERNEL_POLICY
from signoff.audit import verify
from signoff.errors import SignoffError
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind
from signoff.model import Decision, RequestStatus, RunContext
from signoff.store.base import Store

APPROVED, REJECTED = RequestStatus.APPROVED, RequestStatus.REJECTED

# Dozens of racing threads and processes a test: CI's full run (`-m slow`).
pytestmark = pytest.mark.slow


# ---- fixtures and helpers -----------------------------------------------------------------------


@pytest.fixture
def site(store: Store, tmp_path: Path, workspace: Path) -> Site:
    return make_site(store, tmp_path / "site", KERNEL_POLICY.format(root=workspace))


@pytest.fixture
def gate(site: Site, store: Store) -> Gate:
    return build_gate(site, store=store)


@pytest.fixture
def racing(site: Site) -> Iterator[Gate]:
    """A second gate on the same database whose pool lets 40 threads in at once."""
    with many_connections(site.where):
        racing_gate = build_gate(site, store=open_store(site.where, max_size=40))
        try:
            yield racing_gate
        finally:
            racing_gate.store.close()


def add_users(gate: Gate, prefix: str, count: int,
              roles: tuple[str, ...] = ("ops",)) -> list[tuple[Identity, str]]:
    return [gate.add_user(f"{prefix}{i:02d}", roles=roles) for i in range(count)]


def decide(gate: Gate, request_id: str, identity: Identity, kind: str,
           key: str | None = None) -> dict[str, Any]:
    """What a racing decider saw, in the same shape the child processes print."""
    decision = Decision.approve() if kind == "approve" else \
        Decision.reject("racing reject", ["ask again later"])
    try:
        result = gate.decide(request_id, decision, identity=identity, idempotency_key=key)
    except SignoffError as exc:
        return {"ok": False, "code": exc.code, "error": type(exc).__name__}
    return {"ok": True, "transitioned": result.transitioned, "approvals": result.approvals,
            "replayed": result.replayed, "status": result.request.status.value}


def events_for(store: Store, request_id: str) -> list[str]:
    return [e.kind for e in store.audit_events() if e.request_id == request_id]


def assert_chain(store: Store) -> None:
    verification = verify(store.audit_events())
    assert verification.ok, verification


def assert_single_outcome(store: Store, request_id: str, kinds: list[str],
                          results: list[dict[str, Any]]) -> RequestStatus:
    """One decision moved the request; every other one was told ``already_decided``;
    the audit log shows exactly one transition and exactly the decisions that counted."""
    assert len(kinds) == len(results)
    winners = [r for r in results if r["ok"] and r["transitioned"]]
    assert len(winners) == 1, results
    losers = [r for r in results if not r["ok"]]
    assert {r["code"] for r in losers} <= {"already_decided"}, results
    counted = Counter(k for k, r in zip(kinds, results, strict=True) if r["ok"])
    request = store.get_request(request_id)
    assert request is not None
    final = request.status
    events = events_for(store, request_id)
    assert events.count("request.approved") + events.count("request.rejected") == 1, events
    assert events.count(f"request.{final.value}") == 1, events
    assert events.count("decision.recorded") == sum(counted.values()), events
    assert len(store.decisions(request_id)) == sum(counted.values())
    if final is APPROVED:
        assert counted == Counter(approve=request.approvals_required), results
    else:
        assert final is REJECTED
        assert counted["reject"] == 1
        assert counted["approve"] < request.approvals_required
    return final


def assert_executed_once(site: Site, store: Store, request_id: str) -> None:
    assert ledger_lines(site.ledger).count(request_id) == 1
    request = store.get_request(request_id)
    assert request is not None and request.status is RequestStatus.SUCCEEDED
    events = events_for(store, request_id)
    assert events.count("request.executing") == 1, events
    assert events.count("request.succeeded") == 1, events


def resume_in_threads(gate: Gate, request_id: str, count: int = 8) -> list[OutcomeKind]:
    return race(count, lambda _: gate.resume(request_id).kind)


def resume_in_processes(site: Site, request_ids: list[str],
                        count: int = 8) -> list[list[dict[str, Any]]]:
    with Children("resume", [{**site.to_json(), "request_ids": request_ids}] * count) as kids:
        return [kids.step() for _ in request_ids]


# ---- 32 approvers, one request ------------------------------------------------------------------


def test_32_approvers_threads_one_transition_one_execution(
        site: Site, gate: Gate, racing: Gate, store: Store) -> None:
    approvers = add_users(gate, "approver", 32, roles=())
    request = gate.propose(execute_call("race-32"), RunContext(thread_id="t-32")).request
    assert request is not None and request.approvals_required == 1

    results = race(32, lambda i: decide(racing, request.id, approvers[i][0], "approve"))

    assert sum(r["ok"] for r in results) == 1
    assert Counter(r.get("code") for r in results if not r["ok"]) == {"already_decided": 31}
    assert_single_outcome(store, request.id, ["approve"] * 32, results)
    assert events_for(store, request.id) == ["request.created", "decision.recorded",
                                             "request.approved"]

    outcomes = resume_in_threads(racing, request.id, 8)
    assert set(outcomes) <= {OutcomeKind.EXECUTED, OutcomeKind.EXECUTING}, outcomes
    assert_executed_once(site, store, request.id)
    assert ledger_lines(site.ledger) == [request.id]
    assert_chain(store)


def test_32_approvers_processes_one_transition_one_execution(
        site: Site, gate: Gate, store: Store) -> None:
    approvers = add_users(gate, "approver", 32, roles=())
    request = gate.propose(execute_call("race-32p"), RunContext(thread_id="t-32p")).request
    assert request is not None

    configs = [{**site.to_json(), "kind": "approve", "request_ids": [request.id]}] * 32
    with Children("decide", configs, tokens=[token for _, token in approvers]) as kids:
        results = kids.step()

    assert Counter(r.get("code") for r in results if not r["ok"]) == {"already_decided": 31}
    assert_single_outcome(store, request.id, ["approve"] * 32, results)
    assert events_for(store, request.id) == ["request.created", "decision.recorded",
                                             "request.approved"]

    [resumed] = resume_in_processes(site, [request.id], 8)
    assert sum(r["ran"] for r in resumed) == 1, resumed
    assert {r["kind"] for r in resumed} <= {"executed", "executing"}, resumed
    assert_executed_once(site, store, request.id)
    assert ledger_lines(site.ledger) == [request.id]
    assert_chain(store)


# ---- 16 approves against 16 rejects -------------------------------------------------------------

ROUNDS_THREADS = 8
ROUNDS_PROCESSES = 3
CALLS = {"execute": execute_call, "deploy": deploy_call}


@pytest.mark.parametrize("tool", ["execute", "deploy"])
def test_approves_race_rejects_threads(site: Site, gate: Gate, racing: Gate, store: Store,
                                       tool: str) -> None:
    deciders = add_users(gate, "ops", 32)
    kinds = ["approve", "reject"] * 16
    finals: Counter[str] = Counter()
    for round_ in range(ROUNDS_THREADS):
        request = gate.propose(CALLS[tool](f"ar-{tool}-{round_}"),
                               RunContext(thread_id=f"t-ar-{tool}-{round_}")).request
        assert request is not None

        results = race(32, lambda i, rid=request.id: decide(racing, rid, deciders[i][0],
                                                            kinds[i]))

        final = assert_single_outcome(store, request.id, kinds, results)
        finals[final.value] += 1
        outcomes = resume_in_threads(racing, request.id, 4)
        if final is APPROVED:
            assert_executed_once(site, store, request.id)
        else:
            assert set(outcomes) == {OutcomeKind.REJECTED}
            assert request.id not in ledger_lines(site.ledger)
            assert "request.executing" not in events_for(store, request.id)
    assert len(ledger_lines(site.ledger)) == finals["approved"]
    assert len(set(ledger_lines(site.ledger))) == finals["approved"]
    assert_chain(store)


def test_approves_race_rejects_processes(site: Site, gate: Gate, store: Store) -> None:
    deciders = add_users(gate, "ops", 32)
    kinds = ["approve", "reject"] * 16
    requests = []
    for round_ in range(ROUNDS_PROCESSES):
        for tool, call in CALLS.items():
            request = gate.propose(call(f"arp-{tool}-{round_}"),
                                   RunContext(thread_id=f"t-arp-{tool}-{round_}")).request
            assert request is not None
            requests.append(request.id)

    configs = [{**site.to_json(), "kind": kind, "request_ids": requests} for kind in kinds]
    with Children("decide", configs, tokens=[token for _, token in deciders]) as kids:
        rounds = [kids.step() for _ in requests]

    finals = [assert_single_outcome(store, rid, kinds, results)
              for rid, results in zip(requests, rounds, strict=True)]
    resumed = resume_in_processes(site, requests, 4)
    for rid, final, results in zip(requests, finals, resumed, strict=True):
        if final is APPROVED:
            assert sum(r["ran"] for r in results) == 1, results
            assert_executed_once(site, store, rid)
        else:
            assert {r["kind"] for r in results} == {"rejected"}, results
            assert sum(r["ran"] for r in results) == 0
            assert rid not in ledger_lines(site.ledger)
    approved = [rid for rid, final in zip(requests, finals, strict=True) if final is APPROVED]
    assert sorted(ledger_lines(site.ledger)) == sorted(approved)
    assert_chain(store)


# ---- one identity, ten approvals, quorum 2 -----------------------------------------------------


def assert_counted_once(store: Store, request_id: str, results: list[dict[str, Any]]) -> None:
    oks = [r for r in results if r["ok"]]
    assert len(oks) == 1, results
    assert oks[0]["approvals"] == 1 and not oks[0]["transitioned"], results
    assert Counter(r["code"] for r in results if not r["ok"]) == {"already_voted": 9}, results
    request = store.get_request(request_id)
    assert request is not None and request.status is RequestStatus.PENDING
    assert len(store.decisions(request_id)) == 1
    assert events_for(store, request_id) == ["request.created", "decision.recorded"]


def finish_with_second_approver(site: Site, gate: Gate, store: Store, request_id: str,
                                second: Identity) -> None:
    result = gate.decide(request_id, Decision.approve(), identity=second)
    assert result.approvals == 2 and result.transitioned
    assert gate.resume(request_id).kind is OutcomeKind.EXECUTED
    assert_executed_once(site, store, request_id)
    assert_chain(store)


def test_one_identity_ten_approvals_threads_counted_once(
        site: Site, gate: Gate, racing: Gate, store: Store) -> None:
    (alice, _), (bob, _) = add_users(gate, "ops", 2)
    request = gate.propose(deploy_call("q2"), RunContext(thread_id="t-q2")).request
    assert request is not None and request.approvals_required == 2

    results = race(10, lambda _: decide(racing, request.id, alice, "approve"))

    assert_counted_once(store, request.id, results)
    finish_with_second_approver(site, gate, store, request.id, bob)


def test_one_identity_ten_approvals_processes_counted_once(
        site: Site, gate: Gate, store: Store) -> None:
    (_, token), (bob, _) = add_users(gate, "ops", 2)
    request = gate.propose(deploy_call("q2p"), RunContext(thread_id="t-q2p")).request
    assert request is not None and request.approvals_required == 2

    configs = [{**site.to_json(), "kind": "approve", "request_ids": [request.id]}] * 10
    with Children("decide", configs, tokens=[token] * 10) as kids:
        results = kids.step()

    assert_counted_once(store, request.id, results)
    finish_with_second_approver(site, gate, store, request.id, bob)


REPLAY_ROUNDS = 5
def test_one_identity_ten_replays_of_one_key_threads(
        site: Site, gate: Gate, racing: Gate, store: Store,
        request: pytest.FixtureRequest) -> None:
    """The same decision sent ten times at once under one idempotency key (a client
    retrying): one is recorded, nine are replays of it, none is an error (replays are
    idempotent: docs/kernel.md)."""
    approvers = add_users(gate, "ops", 2)
    (alice, _), (bob, _) = approvers
    for round_ in range(REPLAY_ROUNDS):
        pending = gate.propose(deploy_call(f"q2k-{round_}"),
                               RunContext(thread_id=f"t-q2k-{round_}")).request
        assert pending is not None

        results = race(10, lambda _, rid=pending.id, key=f"k-{round_}":
                       decide(racing, rid, alice, "approve", key=key))

        assert all(r["ok"] for r in results), results
        assert sum(not r["replayed"] for r in results) == 1, results
        assert {r["approvals"] for r in results} == {1}
        assert len(store.decisions(pending.id)) == 1
        finish_with_second_approver(site, gate, store, pending.id, bob)


# ---- 8 executors, 1,000 approved requests --------------------------------------------------------

REQUESTS = 1000
EXECUTORS = 8


def test_eight_executor_processes_run_each_of_1000_requests_once(
        site: Site, gate: Gate, store: Store, backend: str) -> None:
    approver, _ = gate.add_user("approver")
    started = time.monotonic()
    ids = []
    for i in range(REQUESTS):
        request = gate.propose(execute_call(f"bulk-{i}")).request
        assert request is not None
        gate.decide(request.id, Decision.approve(), identity=approver)
        ids.append(request.id)
    prepared = time.monotonic()

    configs = [{**site.to_json(), "seed": seed, "batch": 50} for seed in range(EXECUTORS)]
    with Children("executor", configs, timeout=600) as kids:
        results = kids.step()
    finished = time.monotonic()

    lines = ledger_lines(site.ledger)
    assert len(lines) == REQUESTS
    assert Counter(lines) == Counter(ids)  # every request exactly once
    ran = [rid for r in results for rid in r["ran_ids"]]
    assert Counter(ran) == Counter(ids)  # and each by exactly one executor
    assert all(not r["errors"] for r in results), results
    assert store.list_requests(status=RequestStatus.APPROVED, limit=10) == []
    assert len(store.list_requests(status=RequestStatus.SUCCEEDED, limit=REQUESTS + 1)) \
        == REQUESTS
    kinds = Counter(e.kind for e in store.audit_events())
    assert kinds["request.executing"] == REQUESTS
    assert kinds["request.succeeded"] == REQUESTS
    assert_chain(store)
    print(json.dumps({"backend": backend, "prepare_s": round(prepared - started, 2),
                      "execute_s": round(finished - prepared, 2),
                      "per_executor": [r["ran"] for r in results],
                      "outcomes": [r["outcomes"] for r in results],
                      "rounds": [r["rounds"] for r in results]}))
