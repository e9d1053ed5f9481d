"""``Client`` as a ``GateProtocol``: over a real server it answers the gate's calls with
the in-process ``Gate``'s own types, outcomes and typed errors."""

from __future__ import annotations

import pytest
from server_helpers import Served

from signoff import errors
from signoff.kernel.execution import Execution
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.model import RequestStatus, ReviewMode, RunContext, ToolCall
from signoff.remote import Client


def test_propose_claim_report_as_the_gate_answers(served: Served) -> None:
    call = ToolCall(id="p1", name="execute", args={"command": "make build"})
    context = RunContext(thread_id="tp", run_id="r1")
    with Client(served.url, served.agent, policy=served.gate.policy) as agent, \
            Client(served.url, served.alice) as alice:
        proposal = agent.propose(call, context)
        assert proposal.kind is ProposalKind.PENDING
        assert proposal.request is not None
        request_id = proposal.request.id
        stored = served.gate.get_request(request_id)
        for name in ("args", "args_hash", "status", "tool", "risk", "summary", "thread_id",
                     "run_id", "principal", "policy_version"):
            assert getattr(proposal.request, name) == getattr(stored, name), name
        assert proposal.verdict.args_hash == stored.args_hash
        assert agent.propose(call, context).request_id == request_id  # found again
        assert [r.id for r in agent.pending_on_thread("tp")] == [request_id]
        assert agent.thread_memory("tp").pending == ((request_id, "r1"),)
        with pytest.raises(errors.Conflict) as waiting:
            agent.start_run(RunContext(thread_id="tp", run_id="r2"))
        assert waiting.value.code == "thread_waiting"
        assert agent.start_run(context).review_mode is ReviewMode.MANUAL
        early = agent.claim(request_id)  # as Gate.claim: not approved, an Outcome
        assert isinstance(early, Outcome) and early.kind is OutcomeKind.PENDING
        alice.decide(request_id, "approve")
        claimed = agent.claim(request_id)
        assert isinstance(claimed, Execution) and claimed.args == {"command": "make build"}
        second = agent.claim(request_id)
        assert isinstance(second, Outcome) and second.kind is OutcomeKind.EXECUTING
        done = agent.report(claimed, result="built")
        assert (done.kind, done.result) == (OutcomeKind.EXECUTED, "built")
        assert agent.get_request(request_id).status is RequestStatus.SUCCEEDED
        with pytest.raises(errors.NotFound):
            agent.get_request("req_missing")


def test_cancel_withdraws_a_wait_and_keeps_a_decision(served: Served) -> None:
    context = RunContext(thread_id="tc", run_id="r1")
    with Client(served.url, served.agent) as agent, Client(served.url, served.alice) as alice:
        waiting = agent.propose(ToolCall(id="c1", name="execute", args={"command": "a"}),
                                context).request_id
        decided = agent.propose(ToolCall(id="c2", name="execute", args={"command": "b"}),
                                context).request_id
        assert waiting and decided
        alice.decide(decided, "approve")
        gone = agent.cancel(waiting, actor=None, reason="the wait ran out")
        assert (gone.kind, gone.reason) == (OutcomeKind.CANCELLED, "the wait ran out")
        kept = agent.cancel(decided, actor=None, reason="too late")
        assert kept.kind is OutcomeKind.APPROVED
        with pytest.raises(errors.ConfigurationError) as no_policy:
            _ = agent.policy
        assert no_policy.value.code == "no_policy"


def test_a_cancel_pending_only_never_undoes_an_approval_that_came_first(
        served: Served) -> None:
    """What ``Client.cancel(actor=…)`` sends: the server cancels only while the request is
    pending, in the transaction that reads it, so an approval racing the agent's give-up
    stands (a plain cancel by the asker may still withdraw an approved request)."""
    context = RunContext(thread_id="tr", run_id="r1")
    with Client(served.url, served.agent) as agent, Client(served.url, served.alice) as alice:
        first = agent.propose(ToolCall(id="r1", name="execute", args={"command": "a"}),
                              context).request_id
        second = agent.propose(ToolCall(id="r2", name="execute", args={"command": "b"}),
                               context).request_id
        assert first and second
        alice.decide(first, "approve")
        alice.decide(second, "approve")
    with served.client(served.agent) as http:
        refused = http.post(f"/api/v1/requests/{first}/cancel",
                            json={"reason": "gave up", "pending_only": True})
        assert refused.status_code == 409 and refused.json()["code"] == "already_decided"
        assert served.gate.get_request(first).status is RequestStatus.APPROVED
        plain = http.post(f"/api/v1/requests/{second}/cancel", json={"reason": "no longer"})
        assert plain.status_code == 200
        assert served.gate.get_request(second).status is RequestStatus.CANCELLED
