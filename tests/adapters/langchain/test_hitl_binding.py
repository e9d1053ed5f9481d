"""A LangChain HITL resume decides only on the arguments its interrupt showed (issue 42):
each pause shows what would run and its hash; an approver's edit between the interrupt and
the resume makes the resume's decision a refusal (``args_changed``), said in the next
pause, which shows the edited arguments; a decision on that pause counts. Real
``create_agent`` runs, a real SQLite checkpointer, the store on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.types import Command
from lc_helpers import POLICY, Harness, calls

from signoff import Gate, Policy
from signoff.adapters.langchain import SignoffMiddleware
from signoff.canonical import args_hash
from signoff.model import Decision, RequestStatus
from signoff.store.base import Store

TWO = """
[[rules]]
id = "two-deployers"
effect = "ask"
mandatory = true
tool = "deploy"
approvals = 2
"""
USER = {"messages": [{"role": "user", "content": "ship it"}]}
CONFIG = {"configurable": {"thread_id": "t1"}}
STAGING, PROD = {"env": "staging"}, {"env": "prod"}


@pytest.fixture
def h(store: Store, tmp_path: Path) -> Iterator[Harness]:
    root = tmp_path / "ws"
    root.mkdir()
    gate = Gate(Policy.from_toml(POLICY.format(root=root) + TWO, source="lc.toml"), store,
                agent="agent-bot")
    _, token = gate.add_user("alice")
    gate.add_user("bob")
    made = Harness(gate=gate, ledger=tmp_path / "ledger.txt", alice=gate.authenticate(token),
                   tmp=tmp_path)
    yield made
    for conn in made.agents:
        conn.close()


def paused(h: Harness) -> tuple[Any, Any, str]:
    middleware = SignoffMiddleware(h.gate, resume_decisions_as="alice")
    agent, _ = h.agent([calls(("deploy", STAGING, "c1")), AIMessage(content="done")],
                       middleware=middleware)
    out = agent.invoke(USER, CONFIG)
    [interrupt] = out["__interrupt__"]
    return agent, interrupt, str(interrupt.value["signoff"]["request_id"])


def edit_by_bob(h: Harness, request_id: str) -> None:
    bob = h.gate.authenticate(h.gate.rotate_token("bob")[1])
    h.gate.decide(request_id, Decision.edit(PROD), identity=bob)  # one vote of two, on prod


def test_a_resume_approves_only_what_its_interrupt_showed(h: Harness) -> None:
    agent, interrupt, request_id = paused(h)
    assert interrupt.value["args"] == STAGING
    assert interrupt.value["args_hash"] == args_hash(STAGING)
    assert interrupt.value["signoff"]["args_hash"] == args_hash(STAGING)
    assert interrupt.value["action_requests"][0]["args_hash"] == args_hash(STAGING)
    edit_by_bob(h, request_id)

    # alice approves the interrupt she was shown (staging): refused, prod is what would run
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG)
    [again] = out["__interrupt__"]
    assert "args_changed" in again.value["signoff"]["note"]
    assert h.gate.get_request(request_id).status is RequestStatus.PENDING
    assert [d.approver for d in h.gate.store.decisions(request_id)] == ["bob"]
    assert h.ran() == []
    refused = [json.loads(e.data) for e in h.gate.store.audit_events()
               if e.request_id == request_id and e.kind == "decision.refused"]
    assert [r["code"] for r in refused] == ["args_changed"] and refused[0]["via"] == "resume"
    # the next pause shows what would run, and a decision on it counts
    assert again.value["args"] == PROD and again.value["args_hash"] == args_hash(PROD)
    out = agent.invoke(Command(resume={again.id: {"type": "approve"}}), CONFIG)
    assert "__interrupt__" not in out, out.get("__interrupt__")
    assert h.ran() == ["deploy prod"]
    assert sorted(d.approver for d in h.gate.store.decisions(request_id)) == ["alice", "bob"]


def test_a_resume_carrying_the_hash_it_saw_is_bound_to_it(h: Harness) -> None:
    agent, first, request_id = paused(h)
    edit_by_bob(h, request_id)
    out = agent.invoke(Command(resume={first.id: {
        "type": "approve", "args_hash": args_hash(STAGING)}}), CONFIG)
    [again] = out["__interrupt__"]
    assert "args_changed" in again.value["signoff"]["note"]
    out = agent.invoke(Command(resume={again.id: {"type": "approve", "args_hash": "x"}}),
                       CONFIG)
    [third] = out["__interrupt__"]
    assert "not taken" in third.value["signoff"]["note"]
    assert "arguments hash" in third.value["signoff"]["note"]
    assert h.gate.get_request(request_id).status is RequestStatus.PENDING
    out = agent.invoke(Command(resume={third.id: {
        "type": "approve", "args_hash": args_hash(PROD)}}), CONFIG)
    assert "__interrupt__" not in out and h.ran() == ["deploy prod"]
