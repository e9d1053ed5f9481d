"""An agent run inside a gated tool call is its subagent: its requests name the parent call,
and its asks wait in place (it cannot pause its parent's run), then fail closed."""

from __future__ import annotations

import threading

from pyd_helpers import Harness, calls, text

from signoff.adapters.pydantic_ai import Signoff
from signoff.decisions import Decision
from signoff.model import RequestStatus


def delegating(h: Harness, child_turns: list[object], wait: float) -> object:
    async def delegate(task: str) -> str:
        """Hand a task to a helper agent."""
        child, _ = h.agent(child_turns, capability=Signoff(h.gate, subagent_wait=wait))  # type: ignore[arg-type]
        result = await child.run(task)
        return str(result.output)

    return delegate


def test_a_subagents_ask_waits_in_place_then_fails_closed(h: Harness) -> None:
    child_turns = [calls(("transfer", {"amount": 9, "to": "eve"}, "k1")), text("child gave up")]
    agent, script = h.agent([calls(("delegate", {"task": "pay eve"}, "p1")), text("ok")],
                            extra_tools=[delegating(h, child_turns, 0.3)])
    assert agent.run_sync("pay eve").output == "ok"
    assert h.ran() == [] and script.returns()["p1"] == "child gave up"
    [request] = h.gate.list_requests()
    assert request.parent_call == "p1" and request.status is RequestStatus.CANCELLED


def test_a_subagents_ask_decided_while_it_waits_runs(h: Harness) -> None:
    child_turns = [calls(("transfer", {"amount": 9, "to": "eve"}, "k1")), text("child paid")]
    decided: list[str] = []

    def approve_when_asked() -> None:
        for _ in range(200):
            pending = h.gate.list_requests(status=RequestStatus.PENDING)
            if pending:
                h.gate.decide(pending[0].id, Decision.approve(), identity=h.bob)
                decided.append(pending[0].id)
                return
            threading.Event().wait(0.02)

    approver = threading.Thread(target=approve_when_asked)
    approver.start()
    agent, script = h.agent([calls(("delegate", {"task": "pay eve"}, "p1")), text("ok")],
                            extra_tools=[delegating(h, child_turns, 10.0)])
    assert agent.run_sync("pay eve").output == "ok"
    approver.join()
    assert h.ran() == ["transfer 9 eve"] and script.returns()["p1"] == "child paid"
    assert h.gate.get_request(decided[0]).parent_call == "p1"
