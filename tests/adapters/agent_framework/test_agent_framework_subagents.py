"""An agent run as another agent's tool (``agent.as_tool()``): the framework does not carry
the child's approval requests to the parent, so the child's asks wait in place, labelled
with the parent's call (``parent_call``) on the parent's thread; an edit runs as edited (no
framework approval binds the child's call); a wait that runs out withdraws the request and
the child's model is told. The scripted client streams here: ``as_tool`` runs the child
streaming."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from maf_helpers import Harness, ScriptedClient, call

from signoff.adapters.agent_framework import SignoffMiddleware
from signoff.decisions import Decision
from signoff.model import RequestStatus


def family(h: Harness, child_turns: list[Any], *, wait: float) -> tuple[Any, ScriptedClient]:
    from agent_framework import Agent

    child_client = ScriptedClient(child_turns)
    child = Agent(client=child_client, name="payer", tools=h.tools(),
                  middleware=[SignoffMiddleware(h.gate, subagent_wait=wait)])
    parent_client = ScriptedClient([[call("p1", "delegate", task="pay bob")], ["delegated"]])
    parent = Agent(client=parent_client, tools=[child.as_tool(name="delegate")],
                   middleware=[SignoffMiddleware(h.gate)])
    return parent, child_client


def approver(h: Harness, edit: dict[str, Any] | None = None) -> threading.Thread:
    def decide() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pending = h.gate.list_requests(status=RequestStatus.PENDING)
            if pending:
                h.decide(pending[0].id, Decision.edit(edit) if edit else Decision.approve())
                return
            time.sleep(0.05)

    worker = threading.Thread(target=decide)
    worker.start()
    return worker


def test_a_subagents_ask_waits_in_place_labelled_with_the_parent_call(h: Harness) -> None:
    parent, child_client = family(h, [[call("k1", "pay", to="bob", amount=5)], ["paid bob"]],
                                  wait=20)
    session = parent.create_session()
    worker = approver(h)
    response = asyncio.run(parent.run("pay bob through the payer", session=session))
    worker.join()
    assert not response.user_input_requests  # the parent never paused
    assert response.text == "delegated"
    assert h.lines() == ["pay bob 5"]
    (request,) = h.gate.list_requests()
    assert (request.tool, request.parent_call, request.thread_id) == (
        "pay", "p1", session.session_id)
    assert request.status is RequestStatus.SUCCEEDED
    assert child_client.results()["k1"] == "paid 5 to bob"


def test_a_subagents_edit_runs_as_edited(h: Harness) -> None:
    parent, _ = family(h, [[call("k1", "pay", to="bob", amount=500)], ["paid"]], wait=20)
    worker = approver(h, edit={"to": "bob", "amount": 50})
    asyncio.run(parent.run("pay bob", session=parent.create_session()))
    worker.join()
    assert h.lines() == ["pay bob 50"]


def test_a_subagents_wait_that_runs_out_withdraws_the_request(h: Harness) -> None:
    parent, child_client = family(h, [[call("k1", "pay", to="bob", amount=5)], ["gave up"]],
                                  wait=0.2)
    response = asyncio.run(parent.run("pay bob", session=parent.create_session()))
    assert not response.user_input_requests
    assert h.lines() == []
    (request,) = h.gate.list_requests()
    assert request.status is RequestStatus.CANCELLED
    assert "withdrawn" in str(child_client.results()["k1"])
