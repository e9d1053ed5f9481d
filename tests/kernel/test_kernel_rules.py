"""Rules that sit between deciding and running (docs/architecture.md), on both backends."""

from __future__ import annotations

import pytest

from signoff.errors import Conflict, Forbidden, InvalidDecision
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind, ProposalKind
from signoff.model import Decision, Grant, GrantScope, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy, parse_policy
from signoff.store.base import Store

STRICTER = """
[policy]
version = "kernel-2"
gated = ["execute", "deploy"]
[tools.execute]
shell = "command"
[tools.deploy]
[[rules]]
id = "three-man-deploy"
effect = "ask"
mandatory = true
tool = "deploy"
roles = ["ops"]
approvals = 3
"""


def _gate(policy: Policy, store: Store) -> tuple[Gate, list[str]]:
    gate = Gate(policy, store, agent="bot")
    ledger: list[str] = []

    @gate.tool(name="execute")
    def execute(command: str) -> str:
        ledger.append(command)
        return command

    @gate.tool(name="deploy")
    def deploy(target: str) -> str:
        ledger.append(target)
        return target

    return gate, ledger


def test_a_waiting_thread_refuses_new_runs(policy: Policy, store: Store) -> None:
    gate, _ = _gate(policy, store)
    first = RunContext(thread_id="t", run_id="r1")
    assert gate.start_run(first).review_mode is not None
    pending = gate.propose(ToolCall(id="c1", name="execute", args={"command": "make"}), first)
    assert pending.kind is ProposalKind.PENDING and pending.request is not None
    with pytest.raises(Conflict) as info:
        gate.start_run(RunContext(thread_id="t", run_id="r2"))
    assert info.value.code == "thread_waiting" and info.value.http_status == 409
    gate.start_run(RunContext(thread_id="t", run_id="r1"))  # the resume of the same run
    gate.start_run(RunContext(thread_id="other", run_id="r3"))  # other threads are free
    _, token = gate.add_user("alice")
    gate.decide(pending.request.id, Decision.approve(), identity=gate.authenticate(token))
    gate.start_run(RunContext(thread_id="t", run_id="r2"))


def test_a_role_removed_before_the_decision_counts(policy: Policy, store: Store) -> None:
    gate, _ = _gate(policy, store)
    ops, _ = gate.add_user("olga", roles=["ops"])
    proposal = gate.propose(ToolCall(id="d1", name="deploy", args={"target": "prod"}),
                            RunContext(thread_id="t"))
    assert proposal.request is not None
    gate.set_roles("olga", [])
    with pytest.raises(Forbidden) as info:
        gate.decide(proposal.request.id, Decision.approve(), identity=ops)  # stale object
    assert info.value.code == "role_missing"


def test_an_edit_that_needs_more_review_is_refused(policy: Policy, store: Store) -> None:
    gate, ledger = _gate(policy, store)
    _, token = gate.add_user("alice", roles=["ops"])
    alice = gate.authenticate(token)
    proposal = gate.propose(ToolCall(id="c1", name="execute", args={"command": "make"}),
                            RunContext(thread_id="t"))
    assert proposal.request is not None
    # Editing a gated call into one the policy would never let pass is edit_denied …
    with pytest.raises(InvalidDecision) as denied:
        gate.decide(proposal.request.id, Decision.edit({"command": "rm -rf /"}), identity=alice)
    assert denied.value.code == "edit_denied"
    # … and an ordinary edit goes through and is what runs.
    gate.decide(proposal.request.id, Decision.edit({"command": "make test"}), identity=alice)
    assert gate.resume(proposal.request.id).result == "make test"
    assert ledger == ["make test"]


def test_a_stricter_policy_invalidates_an_approved_request(policy: Policy,
                                                           store: Store) -> None:
    gate, ledger = _gate(policy, store)
    _, t1 = gate.add_user("a1", roles=["ops"])
    _, t2 = gate.add_user("a2", roles=["ops"])
    proposal = gate.propose(ToolCall(id="d1", name="deploy", args={"target": "prod"}),
                            RunContext(thread_id="t"))
    assert proposal.request is not None
    for token in (t1, t2):
        gate.decide(proposal.request.id, Decision.approve(), identity=gate.authenticate(token))
    assert store.get_request(proposal.request.id).status is RequestStatus.APPROVED  # type: ignore[union-attr]
    stricter, stricter_ledger = _gate(Policy(parse_policy(STRICTER)), store)
    outcome = stricter.resume(proposal.request.id)
    assert outcome.kind is OutcomeKind.INVALIDATED and outcome.code == "policy_changed"
    assert "3 approvals" in (outcome.reason or "")
    assert ledger == [] and stricter_ledger == []


def test_a_once_grant_is_used_once(policy: Policy, store: Store) -> None:
    gate, _ = _gate(policy, store)
    with store.transaction() as tx:
        tx.insert_grant(Grant(id="g1", scope=GrantScope.ONCE, tool="execute",
                              args={"command": "make"}, thread_id="t"), at=0.0,
                        request_id=None)
    context = RunContext(thread_id="t")
    first = gate.propose(ToolCall(id="c1", name="execute", args={"command": "make"}), context)
    assert first.kind is ProposalKind.ALLOWED and first.verdict.source == "grant:g1"
    second = gate.propose(ToolCall(id="c2", name="execute", args={"command": "make"}), context)
    assert second.kind is ProposalKind.PENDING


def test_the_recorded_head_catches_a_truncated_audit(store: Store, policy: Policy) -> None:
    gate, _ = _gate(policy, store)
    gate.add_user("alice")
    gate.propose(ToolCall(id="c1", name="execute", args={"command": "make"}),
                 RunContext(thread_id="t"))
    assert store.verify_audit().ok
    head = store.audit_head()
    assert head[0] == len(list(store.audit_events()))


ESCALATING = """
[policy]
version = "kernel-3"
gated = ["execute"]
[tools.execute]
shell = "command"
[[rules]]
id = "network-needs-security"
effect = "ask"
mandatory = true
tool = "execute"
command = "curl *"
roles = ["security"]
approvals = 2
"""


def test_an_edit_into_a_stricter_call_is_refused(store: Store) -> None:
    gate, ledger = _gate(Policy(parse_policy(ESCALATING)), store)
    _, token = gate.add_user("alice")
    proposal = gate.propose(ToolCall(id="c1", name="execute", args={"command": "make"}),
                            RunContext(thread_id="t"))
    assert proposal.request is not None
    with pytest.raises(InvalidDecision) as info:
        gate.decide(proposal.request.id, Decision.edit({"command": "curl evil.example"}),
                    identity=gate.authenticate(token))
    assert info.value.code == "edit_escalates" and "2 approvals" in info.value.message
    assert store.get_request(proposal.request.id).status is RequestStatus.PENDING  # type: ignore[union-attr]
    assert ledger == []


def test_proposing_a_decided_call_again_resumes_it_once(policy: Policy, store: Store) -> None:
    gate, ledger = _gate(policy, store)
    _, token = gate.add_user("alice")
    call = ToolCall(id="c1", name="execute", args={"command": "make"})
    context = RunContext(thread_id="t")
    first = gate.propose(call, context)
    assert first.kind is ProposalKind.PENDING and first.request is not None
    gate.decide(first.request.id, Decision.approve(), identity=gate.authenticate(token))
    again = gate.propose(call, context)  # e.g. a framework re-running its node
    assert again.kind is ProposalKind.DECIDED and again.request is not None
    assert again.request.id == first.request.id
    assert gate.run(call, context).result == "make"
    assert gate.run(call, context).result == "make"
    assert ledger == ["make"]


def test_no_self_review_through_the_mode_in_process(policy: Policy, store: Store) -> None:
    """The gate itself enforces it: a party of a thread cannot raise its mode; trusted
    code (no actor) can; a mode its asker raised does not count for the asker."""
    from signoff.policy.modes import trusted_context

    gate, _ = _gate(policy, store)
    ann = trusted_context(thread_id="t", principal="ann")
    asked = gate.propose(ToolCall(id="a1", name="execute", args={"command": "make build"}),
                         ann)
    assert asked.kind is ProposalKind.PENDING
    with pytest.raises(Forbidden) as refused:
        gate.set_thread_mode("t", "auto", actor="ann")
    assert refused.value.code == "self_approval"
    with pytest.raises(Forbidden):
        gate.set_thread_mode("t", "full", actor="bot")  # the gate's agent asked too
    gate.set_thread_mode("t", "manual", actor="ann")  # lowering (or keeping) is fine
    gate.set_thread_mode("t", "full")  # trusted code is no party
    again = gate.propose(ToolCall(id="a2", name="execute", args={"command": "make lint"}), ann)
    assert again.kind is ProposalKind.ALLOWED
    # raised by its own asker: does not count for her, does for others (an admin: only
    # admins may set full by default, and a mode lends only what its setter holds)
    gate.add_user("cy", kind="admin")
    gate.set_thread_mode("u", "full", actor="cy")
    cy = trusted_context(thread_id="u", principal="cy")
    mine = gate.propose(ToolCall(id="c1", name="execute", args={"command": "make build"}), cy)
    assert mine.kind is ProposalKind.PENDING and mine.verdict.review_mode.value == "manual"
    other = gate.propose(ToolCall(id="c2", name="execute", args={"command": "make build"}),
                         trusted_context(thread_id="u", principal="dee"))
    assert other.kind is ProposalKind.ALLOWED
    # self-service: a party may raise its own thread, and it counts for its calls
    own = Gate(Policy(parse_policy("[policy]\nself_service_modes = true\n"
                                   "[tools.execute]\nshell = 'command'\n")), store, agent=None)
    own.set_thread_mode("t", "manual")
    own.add_user("ann", kind="admin")  # the single user: the first admin
    own.set_thread_mode("t", "full", actor="ann")
    assert own.propose(ToolCall(id="a3", name="execute", args={"command": "make docs"}),
                       ann).kind is ProposalKind.ALLOWED
