"""``waiting_handler`` with Pydantic AI's ``HandleDeferredToolCalls``: the run waits in
place for the decision and goes on; undecided in time, it ends paused as without it."""

from __future__ import annotations

import threading

from pyd_helpers import Harness, calls, text
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

from signoff.adapters.pydantic_ai import Paused, request_ids, waiting_handler
from signoff.decisions import Decision
from signoff.model import RequestStatus


def test_the_run_waits_in_place_for_the_decision(h: Harness) -> None:
    def approve_when_asked() -> None:
        for _ in range(200):
            pending = h.gate.list_requests(status=RequestStatus.PENDING)
            if pending:
                h.gate.decide(pending[0].id, Decision.approve(), identity=h.alice)
                return
            threading.Event().wait(0.02)

    approver = threading.Thread(target=approve_when_asked)
    approver.start()
    agent, script = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("shipped")],
                            more=[HandleDeferredToolCalls(
                                handler=waiting_handler(h.gate, wait_seconds=10))])
    result = agent.run_sync("ship it")
    approver.join()
    assert result.output == "shipped" and h.ran() == ["deploy prod latest"]
    assert script.returns()["d1"] == "deployed latest to prod"


def test_undecided_in_time_the_run_ends_paused(h: Harness) -> None:
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("shipped")],
                       more=[HandleDeferredToolCalls(
                           handler=waiting_handler(h.gate, wait_seconds=0.2))])
    paused = Paused.of(agent.run_sync("ship it"))
    assert list(request_ids(paused.requests)) == ["d1"] and h.ran() == []


def test_a_handler_that_approves_by_itself_approves_nothing(h: Harness) -> None:
    def yes(ctx: object, requests: DeferredToolRequests) -> DeferredToolResults:
        return requests.build_results(approve_all=True)

    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1")), text("shipped")],
                       more=[HandleDeferredToolCalls(handler=yes)])
    paused = Paused.of(agent.run_sync("ship it"))
    assert list(request_ids(paused.requests)) == ["d1"] and h.ran() == []
