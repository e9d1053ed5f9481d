"""``Gate.decide_once`` and ``decide(via=…)``: a decision from a channel that may deliver it
again (a LangGraph resume) is judged once per delivery key — taken or refused — and audited
with the channel it arrived by. Both backends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from signoff.kernel.gate import Gate
from signoff.model import Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store


@pytest.fixture
def gate(policy: Policy, store: Store) -> Gate:
    made = Gate(policy, store, agent="agent-bot")
    made.add_user("alice", roles=["ops"])
    made.add_user("bob", roles=["ops"])
    made.add_user("carol")
    made.add_user("robot", kind="agent")
    return made


def pending(gate: Gate, tool: str = "execute", args: dict[str, Any] | None = None,
            call_id: str = "c1") -> str:
    proposal = gate.propose(ToolCall(id=call_id, name=tool, args=args or {"command": "make"}),
                            RunContext(thread_id="t-1", run_id="r-1", principal="paula"))
    assert proposal.request is not None
    return proposal.request.id


def events(gate: Gate, kind: str) -> list[dict[str, Any]]:
    return [{"request_id": e.request_id, "actor": e.actor, **json.loads(e.data)}
            for e in gate.store.audit_events() if e.kind == kind]


def test_via_is_kept_in_the_decision_event_only_when_given(gate: Gate) -> None:
    first, second = pending(gate, call_id="c1"), pending(gate, call_id="c2")
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(first, Decision.approve(), identity=alice, via="resume")
    gate.decide(second, Decision.approve(), identity=alice)
    recorded = {e["request_id"]: e for e in events(gate, "decision.recorded")}
    assert recorded[first]["via"] == "resume"
    assert "via" not in recorded[second]
    assert gate.store.verify_audit().ok


def test_a_taken_decision_replays_as_itself(gate: Gate) -> None:
    request_id = pending(gate)
    once = gate.decide_once(request_id, Decision.approve(), user="alice", key="k1",
                            via="resume")
    assert not once.refused and not once.replayed
    assert once.result is not None and once.result.request.status is RequestStatus.APPROVED
    again = gate.decide_once(request_id, Decision.approve(), user="alice", key="k1",
                             via="resume")
    assert not again.refused and again.replayed
    assert len(gate.store.decisions(request_id)) == 1
    assert len(events(gate, "decision.recorded")) == 1


@pytest.mark.parametrize(("user", "decision", "code"), [
    ("paula", Decision.approve(), "self_approval"),  # the requester
    ("agent-bot", Decision.approve(), "unauthenticated"),  # the agent's name: no such user
    ("robot", Decision.approve(), "agent_cannot_decide"),
    ("nobody", Decision.approve(), "unauthenticated"),
    ("alice", Decision.edit({"command": "rm -rf /"}), "edit_denied"),
])
def test_a_refusal_is_returned_recorded_and_never_judged_again(
        gate: Gate, user: str, decision: Decision, code: str) -> None:
    if user == "paula":
        gate.add_user("paula")
    request_id = pending(gate)
    once = gate.decide_once(request_id, decision, user=user, key="k1", via="resume")
    assert once.refused and once.code == code and not once.replayed
    assert gate.store.decisions(request_id) == []
    assert gate.get_request(request_id).status is RequestStatus.PENDING
    [refused] = events(gate, "decision.refused")
    assert (refused["request_id"], refused["actor"], refused["code"], refused["via"]) == (
        request_id, user, code, "resume")
    again = gate.decide_once(request_id, decision, user=user, key="k1", via="resume")
    assert again.refused and again.replayed and again.code == code
    assert len(events(gate, "decision.refused")) == 1
    assert gate.store.verify_audit().ok


def test_a_refused_delivery_stays_refused_when_the_rules_change(gate: Gate) -> None:
    request_id = pending(gate)
    gate.disable_user("alice")
    assert gate.decide_once(request_id, Decision.approve(), user="alice", key="k1",
                            via="resume").code == "identity_disabled"
    gate.enable_user("alice")
    replay = gate.decide_once(request_id, Decision.approve(), user="alice", key="k1",
                              via="resume")
    assert replay.refused and replay.replayed
    assert gate.get_request(request_id).status is RequestStatus.PENDING
    # A new delivery (another key) is judged on its own.
    fresh = gate.decide_once(request_id, Decision.reject("no"), user="alice", key="k2",
                             via="resume")
    assert not fresh.refused
    assert gate.get_request(request_id).status is RequestStatus.REJECTED


def test_a_precheck_refuses_like_the_kernel(gate: Gate) -> None:
    from signoff.errors import InvalidDecision

    request_id = pending(gate)

    def check() -> None:
        raise InvalidDecision("not for this tool", code="invalid_edit")

    once = gate.decide_once(request_id, Decision.edit({"command": "make all"}), user="alice",
                            key="k1", via="resume", precheck=check)
    assert once.refused and once.code == "invalid_edit"
    assert gate.store.decisions(request_id) == []
    assert [e["code"] for e in events(gate, "decision.refused")] == ["invalid_edit"]


def test_an_unknown_request_is_refused_without_naming_a_request_row(gate: Gate) -> None:
    once = gate.decide_once("req_missing", Decision.approve(), user="alice", key="k1",
                            via="resume")
    assert once.refused and once.code == "not_found"
    [refused] = events(gate, "decision.refused")
    assert refused["request_id"] is None and refused["request"] == "req_missing"
