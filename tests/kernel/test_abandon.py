"""``Gate.abandon``: a claimed run that lost sight of its call (the MCP server it was
forwarded to died, its client cancelled it) is ``unknown`` at once — never run again,
settled later by a late report, ``verify`` or a human. Both backends."""

from __future__ import annotations

import json

import pytest

from signoff.errors import Conflict
from signoff.kernel.execution import Execution
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.model import Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store


@pytest.fixture
def gate(policy: Policy, store: Store) -> Gate:
    made = Gate(policy, store, agent="agent-bot")
    made.add_user("alice", roles=["ops"])
    return made


def claimed(gate: Gate, call_id: str = "c1") -> Execution:
    proposal = gate.propose(ToolCall(id=call_id, name="execute", args={"command": "make"}),
                            RunContext(thread_id="t-1"))
    assert proposal.request is not None
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(proposal.request.id, Decision.approve(), identity=alice)
    execution = gate.claim(proposal.request.id)
    assert isinstance(execution, Execution)
    return execution


def test_abandon_makes_the_run_unknown_with_its_reason_and_audit(gate: Gate) -> None:
    execution = claimed(gate)
    outcome = gate.abandon(execution, reason="the MCP server closed during the call")
    assert outcome.kind is OutcomeKind.UNKNOWN and outcome.code == "outcome_lost"
    request = gate.get_request(execution.request_id)
    assert request.status is RequestStatus.UNKNOWN
    assert request.outcome_reason == "the MCP server closed during the call"
    moves = [json.loads(e.data) for e in gate.store.audit_events()
             if e.request_id == execution.request_id and e.kind == "request.unknown"]
    assert len(moves) == 1 and moves[0]["from"] == "executing"
    # Never run again: a claim finds it unknown.
    again = gate.claim(execution.request_id)
    assert isinstance(again, Outcome) and again.kind is OutcomeKind.UNKNOWN
    assert gate.store.verify_audit().ok


def test_a_late_report_from_the_holder_still_settles_it(gate: Gate) -> None:
    execution = claimed(gate)
    gate.abandon(execution, reason="client cancelled")
    settled = gate.report(execution, result={"ok": True})
    assert settled.kind is OutcomeKind.EXECUTED
    assert gate.get_request(execution.request_id).status is RequestStatus.SUCCEEDED


def test_only_the_fencing_token_holder_abandons_and_a_settled_run_stays(gate: Gate) -> None:
    execution = claimed(gate)
    stale = Execution(execution.request_id, execution.fencing_token - 1, execution.args)
    assert gate.abandon(stale, reason="not mine").kind is OutcomeKind.EXECUTING
    gate.report(execution, result="done")
    assert gate.abandon(execution, reason="too late").kind is OutcomeKind.EXECUTED
    assert gate.get_request(execution.request_id).status is RequestStatus.SUCCEEDED
    with pytest.raises(Conflict):
        gate.report(stale, result="again")
