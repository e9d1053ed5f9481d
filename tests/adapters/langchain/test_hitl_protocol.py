"""LangChain's HITL interrupt protocol on signoff's pauses (issue 14, item 3).

Every pause validates as langchain's own ``HITLRequest`` and ``ToolApprovalRequest``; with
``SignoffMiddleware(resume_decisions_as=<user>)`` a resume value carrying decisions (the way
Agent Chat UI, Agent Inbox and similar web front-ends send them) is taken as that user's decision,
through the gate's rules, for exactly the request its interrupt stands for. Without the opt-in
the same values change nothing. Real ``create_agent`` runs, a real SQLite checkpointer, the
store on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents.middleware.human_in_the_loop import HITLRequest, ToolApprovalRequest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt.interrupt import HumanInterrupt
from langgraph.types import Command
from lc_helpers import POLICY, Harness, calls
from pydantic import TypeAdapter

from signoff import Gate, Policy
from signoff.adapters.langchain import (
    SignoffContext,
    SignoffMiddleware,
    pending_request_ids,
    resume_command,
)
from signoff.adapters.langchain.hitl import DEFAULT_REJECTION, IGNORED, WAKE_ONLY, resume_decision
from signoff.errors import ConfigurationError
from signoff.model import Decision, DecisionKind, RequestStatus
from signoff.store.base import Store

USER = {"messages": [{"role": "user", "content": "ship it"}]}
HITL = TypeAdapter(HITLRequest)
PER_CALL = TypeAdapter(ToolApprovalRequest)
LEGACY = TypeAdapter(HumanInterrupt)  # what older Agent Inbox / Agent Chat UI look for


def config(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


@pytest.fixture
def hs(store: Store, tmp_path: Path) -> Iterator[Harness]:
    """The adapter harness on the parametrised store (SQLite, PostgreSQL); users alice and
    bob approve, ``bot`` is an agent identity."""
    root = tmp_path / "ws"
    root.mkdir()
    policy = Policy.from_toml(POLICY.format(root=root), source="lc.toml")
    gate = Gate(policy, store, agent="agent-bot")
    _, token = gate.add_user("alice")
    gate.add_user("bob")
    gate.add_user("bot", kind="agent")
    made = Harness(gate=gate, ledger=tmp_path / "ledger.txt", alice=gate.authenticate(token),
                   tmp=tmp_path)
    yield made
    for conn in made.agents:
        conn.close()


def paused(h: Harness, turn: AIMessage, *, opt_in: str | None = "alice",
           thread: str = "t1", principal: str | None = None) -> tuple[Any, Any]:
    """An agent paused on ``turn``'s calls; returns it and the interrupts."""
    middleware = SignoffMiddleware(h.gate, resume_decisions_as=opt_in)
    agent, _ = h.agent([turn, AIMessage(content="done")], middleware=middleware)
    out = agent.invoke(USER, config(thread), context=SignoffContext(principal=principal))
    assert out.get("__interrupt__"), out
    return agent, out["__interrupt__"]


def request_of(h: Harness, call_id: str, thread: str = "t1") -> Any:
    return next(r for r in h.gate.store.list_requests(thread_id=thread)
                if r.call_id == call_id)


def events(h: Harness, request_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    return [{"kind": e.kind, "actor": e.actor, **json.loads(e.data)}
            for e in h.gate.store.audit_events() if e.request_id == request_id
            and (kind is None or e.kind == kind)]


def tool_messages(out: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}


DEPLOY = calls(("deploy", {"env": "prod"}, "c1"))


# ---- the shapes ---------------------------------------------------------------------------

@pytest.mark.parametrize("opt_in", ["alice", None])
def test_every_pause_is_a_hitl_request_and_a_tool_approval_request(
        hs: Harness, opt_in: str | None) -> None:
    turn = calls(("deploy", {"env": "prod"}, "c1"), ("execute", {"command": "make"}, "c2"))
    agent, interrupts = paused(hs, turn, opt_in=opt_in)
    assert len(interrupts) == 2  # one per call: each is answered by its own interrupt id
    by_call = {}
    for item in interrupts:
        value = item.value
        hitl = HITL.validate_python(value)
        per_call = PER_CALL.validate_python(value)
        legacy = LEGACY.validate_python(value)
        assert legacy["action_request"] == {"action": value["name"], "args": value["args"]}
        assert all(legacy["config"].values())
        request = hs.gate.get_request(value["signoff"]["request_id"])
        assert per_call["type"] == "tool_approval"
        assert per_call["tool_call_id"] == request.call_id
        assert per_call["name"] == request.tool
        assert per_call["args"] == json.loads(request.args)
        assert request.id in per_call["description"]
        [action] = hitl["action_requests"]
        [review] = hitl["review_configs"]
        assert (action["name"], action["args"]) == (request.tool, json.loads(request.args))
        assert review["action_name"] == request.tool
        assert review["allowed_decisions"] == ["approve", "edit", "reject", "respond"]
        # The tool's own argument schema, as the model sees it.
        assert "env" in review["args_schema"]["properties"] or \
            "command" in review["args_schema"]["properties"]
        assert value["signoff"]["resume_decisions"] is (opt_in is not None)
        assert (WAKE_ONLY in per_call["description"]) is (opt_in is None)
        # A form for the answer only where an answer is taken; a dict schema, never enforced.
        assert (item.response_schema is not None) is (opt_in is not None)
        by_call[request.call_id] = request.id
    assert sorted(pending_request_ids(agent, config())) == sorted(by_call.values())


# ---- each decision type by resume, as the same decision in the inbox ----------------------

CASES = {
    "approve": ({"type": "approve"}, Decision.approve()),
    "edit": ({"type": "edit", "edited_action": {"name": "deploy", "args": {"env": "staging"}}},
             Decision.edit({"env": "staging"})),
    "reject": ({"type": "reject", "message": "not on a Friday"},
               Decision.reject("not on a Friday")),
    "respond": ({"type": "respond", "message": "prod is frozen; nothing to do"},
                Decision.respond("prod is frozen; nothing to do")),
}


@pytest.mark.parametrize("kind", list(CASES))
def test_a_decision_by_resume_takes_effect_as_the_same_decision_in_the_inbox(
        hs: Harness, kind: str) -> None:
    sent, same = CASES[kind]
    # The inbox: decided through the gate, then woken.
    inbox, _ = paused(hs, DEPLOY, opt_in=None, thread="inbox")
    request = request_of(hs, "c1", "inbox")
    hs.gate.decide(request.id, same, identity=hs.alice)
    by_inbox = inbox.invoke(resume_command(inbox, config("inbox")), config("inbox"))
    ran_by_inbox = hs.ran()
    hs.ledger.unlink(missing_ok=True)
    # The resume: Agent Chat UI's Command(resume={"decisions": [...]}) for one interrupt.
    agent, _ = paused(hs, calls(("deploy", {"env": "prod"}, "c1")))
    mine = request_of(hs, "c1")
    out = agent.invoke(Command(resume={"decisions": [sent]}), config())
    assert "__interrupt__" not in out
    assert hs.ran() == ran_by_inbox == {"approve": ["deploy prod"],
                                        "edit": ["deploy staging"]}.get(kind, [])
    mine_said, inbox_said = tool_messages(out)["c1"], tool_messages(by_inbox)["c1"]
    assert mine_said.status == inbox_said.status
    if kind == "reject":
        # The inbox's run is answered on re-proposal by the thread's rejection memory, the
        # resume's by its request: the same reason and instruction, worded apart.
        for said in (mine_said, inbox_said):
            assert "not on a Friday" in str(said.content)
            assert "Do not retry the same call" in str(said.content)
    else:
        assert mine_said.content == inbox_said.content
    now, then = hs.gate.get_request(mine.id), hs.gate.get_request(request.id)
    assert now.status is then.status
    assert now.approved_args == then.approved_args
    [record] = hs.gate.store.decisions(mine.id)
    assert (record.kind.value, record.approver) == (same.kind.value, "alice")
    assert (record.reason, record.message) == (same.reason, same.message)
    # Audited as arriving by resume (the inbox's record says nothing of the kind).
    [audited] = events(hs, mine.id, "decision.recorded")
    assert audited["via"] == "resume" and audited["actor"] == "alice"
    assert "via" not in events(hs, request.id, "decision.recorded")[0]
    assert hs.gate.store.verify_audit().ok


def test_a_rejection_without_a_message_gets_one(hs: Harness) -> None:
    agent, _ = paused(hs, DEPLOY)
    out = agent.invoke(Command(resume={"type": "reject"}), config())  # a per-call answer
    assert hs.ran() == []
    assert hs.gate.get_request(request_of(hs, "c1").id).status is RequestStatus.REJECTED
    assert DEFAULT_REJECTION in str(tool_messages(out)["c1"].content)


@pytest.mark.parametrize(("sent", "status", "ran"), [
    ([{"type": "accept", "args": None}], RequestStatus.SUCCEEDED, ["deploy prod"]),
    ([{"type": "edit", "args": {"action": "deploy", "args": {"env": "qa"}}}],
     RequestStatus.SUCCEEDED, ["deploy qa"]),
    ([{"type": "response", "args": "use the pipeline"}], RequestStatus.RESPONDED, []),
    ([{"type": "ignore", "args": None}], RequestStatus.REJECTED, []),
])
def test_legacy_agent_inbox_responses(hs: Harness, sent: list[dict[str, Any]],
                                      status: RequestStatus, ran: list[str]) -> None:
    agent, _ = paused(hs, DEPLOY)
    out = agent.invoke(Command(resume=sent), config())
    assert "__interrupt__" not in out
    assert hs.ran() == ran
    request = hs.gate.get_request(request_of(hs, "c1").id)
    assert request.status is status
    if sent[0]["type"] == "ignore":
        assert request.outcome_reason == IGNORED


def test_several_pending_calls_are_answered_by_interrupt_id(hs: Harness) -> None:
    turn = calls(("deploy", {"env": "prod"}, "c1"), ("execute", {"command": "make"}, "c2"),
                 ("execute", {"command": "make docs"}, "c3"))
    agent, interrupts = paused(hs, turn)
    answers = {"c1": {"decisions": [{"type": "approve"}]},  # HITLResponse, one decision
               "c2": {"type": "reject", "message": "no"},  # the per-call Decision
               "c3": {"decisions": [{"type": "edit", "edited_action": {
                   "name": "execute", "args": {"command": "make html"}}}]}}
    resume = {i.id: answers[i.value["tool_call_id"]] for i in interrupts}
    out = agent.invoke(Command(resume=resume), config())
    assert "__interrupt__" not in out
    assert sorted(hs.ran()) == ["deploy prod", "execute make html"]
    status = {c: hs.gate.get_request(request_of(hs, c).id).status for c in answers}
    assert status == {"c1": RequestStatus.SUCCEEDED, "c2": RequestStatus.REJECTED,
                      "c3": RequestStatus.SUCCEEDED}
    assert "no" in str(tool_messages(out)["c2"].content)


def test_a_plain_value_for_several_pending_calls_changes_nothing(hs: Harness) -> None:
    """LangGraph itself refuses a resume that names no interrupt while several wait: no
    decision is ever matched to a call by position."""
    turn = calls(("deploy", {"env": "prod"}, "c1"), ("execute", {"command": "make"}, "c2"))
    agent, _ = paused(hs, turn)
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}, {"type": "approve"}]}),
                     config())
    assert hs.ran() == []
    for call_id in ("c1", "c2"):
        request = request_of(hs, call_id)
        assert hs.gate.get_request(request.id).status is RequestStatus.PENDING
        assert hs.gate.store.decisions(request.id) == []
    assert len(agent.get_state(config()).interrupts) == 2  # still paused, both answerable


@pytest.mark.parametrize("other_value", [{"wake": True}, None])  # None: left out
def test_a_partial_map_decides_what_it_names_and_the_rest_pauses_again(
        hs: Harness, other_value: Any) -> None:
    turn = calls(("deploy", {"env": "prod"}, "c1"), ("execute", {"command": "make"}, "c2"))
    agent, interrupts = paused(hs, turn)
    first = next(i for i in interrupts if i.value["tool_call_id"] == "c1")
    other = next(i for i in interrupts if i.value["tool_call_id"] == "c2")
    resume: dict[str, Any] = {first.id: {"decisions": [{"type": "approve"}]}}
    if other_value is not None:
        resume[other.id] = other_value
    out = agent.invoke(Command(resume=resume), config())
    assert hs.ran() == ["deploy prod"]
    [again] = out["__interrupt__"]
    assert again.value["tool_call_id"] == "c2"
    out = agent.invoke(Command(resume={again.id: {"type": "approve"}}), config())
    assert "__interrupt__" not in out
    assert hs.ran() == ["deploy prod", "execute make"]  # each once


def test_decisions_by_resume_in_an_asyncio_application(hs: Harness) -> None:
    turn = calls(("deploy", {"env": "prod"}, "c1"), ("execute", {"command": "make"}, "c2"))
    agent, _ = hs.agent([turn, AIMessage(content="done")], in_memory=True,
                        middleware=SignoffMiddleware(hs.gate, resume_decisions_as="alice"))

    async def main() -> Any:
        out = await agent.ainvoke(USER, config())
        resume = {i.id: ({"type": "approve"} if i.value["name"] == "deploy"
                         else {"type": "respond", "message": "skip it"})
                  for i in out["__interrupt__"]}
        return await agent.ainvoke(Command(resume=resume), config())

    out = asyncio.run(main())
    assert out["messages"][-1].content == "done"
    assert hs.ran() == ["deploy prod"]
    assert tool_messages(out)["c2"].content == "skip it"


def test_a_quorum_counts_a_resume_approval_once(hs: Harness, tmp_path: Path) -> None:
    root = tmp_path / "ws2"
    root.mkdir()
    two = POLICY.format(root=root) + """
[[rules]]
id = "two-deployers"
effect = "ask"
mandatory = true
tool = "deploy"
approvals = 2
"""
    gate = Gate(Policy.from_toml(two, source="lc.toml"), hs.gate.store, agent="agent-bot")
    h = Harness(gate=gate, ledger=hs.ledger, alice=hs.alice, tmp=tmp_path, agents=hs.agents)
    agent, _ = paused(h, DEPLOY)
    request = request_of(h, "c1")
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config())
    [again] = out["__interrupt__"]
    assert "1 of 2 approvals" in again.value["signoff"]["note"]
    # The same approver again, in a new delivery: the kernel counts them once.
    out = agent.invoke(Command(resume={again.id: {"type": "approve"}}), config())
    assert "already_voted" in out["__interrupt__"][0].value["signoff"]["note"]
    assert h.ran() == []
    bob = gate.authenticate(gate.rotate_token("bob")[1])
    gate.decide(request.id, Decision.approve(), identity=bob)
    out = agent.invoke(resume_command(agent, config()), config())
    assert "__interrupt__" not in out and h.ran() == ["deploy prod"]
    assert sorted(d.approver for d in gate.store.decisions(request.id)) == ["alice", "bob"]


# ---- refused: the kernel's rules -----------------------------------------------------------

def test_self_approval_by_resume_is_refused(hs: Harness) -> None:
    # The named identity is the thread's principal: it asked for the call.
    agent, _ = paused(hs, DEPLOY, opt_in="bob", principal="bob")
    request = request_of(hs, "c1")
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config())
    assert hs.ran() == []
    assert hs.gate.get_request(request.id).status is RequestStatus.PENDING
    assert hs.gate.store.decisions(request.id) == []
    [again] = out["__interrupt__"]  # the run pauses again and says why
    assert "self_approval" in again.value["signoff"]["note"]
    assert "self_approval" in again.value["description"]
    [refused] = events(hs, request.id, "decision.refused")
    assert (refused["code"], refused["via"], refused["actor"]) == ("self_approval", "resume",
                                                                   "bob")
    # Someone else decides in the inbox; a wake-up runs it, once.
    hs.gate.decide(request.id, Decision.approve(), identity=hs.alice)
    out = agent.invoke(resume_command(agent, config()), config())
    assert "__interrupt__" not in out and hs.ran() == ["deploy prod"]
    assert len(events(hs, request.id, "decision.refused")) == 1  # the replay was not re-judged
    assert hs.gate.store.verify_audit().ok


def test_an_edit_the_policy_denies_is_refused(hs: Harness) -> None:
    agent, _ = paused(hs, calls(("execute", {"command": "make build"}, "c1")))
    request = request_of(hs, "c1")
    out = agent.invoke(Command(resume={"decisions": [{"type": "edit", "edited_action": {
        "name": "execute", "args": {"command": "rm -rf /"}}}]}), config())
    assert hs.ran() == []
    assert hs.gate.get_request(request.id).status is RequestStatus.PENDING
    assert hs.gate.store.decisions(request.id) == []
    assert "edit_denied" in out["__interrupt__"][0].value["signoff"]["note"]
    assert [e["code"] for e in events(hs, request.id, "decision.refused")] == ["edit_denied"]
    # The same interrupt id as the front-end sees it, answered again: approve runs the call.
    [again] = out["__interrupt__"]
    out = agent.invoke(Command(resume={again.id: {"type": "approve"}}), config())
    assert hs.ran() == ["execute make build"]


@pytest.mark.parametrize(("edited", "code"), [
    ({"name": "execute", "args": {"command": "ls"}}, "edit_renames"),  # another tool
    ({"name": "deploy", "args": {"target": "prod"}}, "invalid_edit"),  # the tool's schema
])
def test_an_edit_that_changes_the_tool_or_breaks_its_schema_is_refused(
        hs: Harness, edited: dict[str, Any], code: str) -> None:
    agent, _ = paused(hs, DEPLOY)
    request = request_of(hs, "c1")
    out = agent.invoke(Command(resume={"decisions": [{"type": "edit",
                                                      "edited_action": edited}]}), config())
    assert hs.ran() == [] and hs.gate.store.decisions(request.id) == []
    assert hs.gate.get_request(request.id).status is RequestStatus.PENDING
    assert code in out["__interrupt__"][0].value["signoff"]["note"]
    assert [e["code"] for e in events(hs, request.id, "decision.refused")] == [code]


def test_a_decision_after_the_inbox_decided_changes_nothing(hs: Harness) -> None:
    agent, _ = paused(hs, DEPLOY)
    request = request_of(hs, "c1")
    hs.gate.decide(request.id, Decision.reject("use staging"), identity=hs.alice)
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config())
    assert "__interrupt__" not in out
    assert hs.ran() == []
    assert hs.gate.get_request(request.id).status is RequestStatus.REJECTED
    assert [d.kind for d in hs.gate.store.decisions(request.id)] == [DecisionKind.REJECT]
    assert "use staging" in str(tool_messages(out)["c1"].content)


def test_the_kernel_refuses_a_resume_decision_for_a_request_no_longer_pending(
        hs: Harness) -> None:
    """The race the run cannot show: decided in the inbox between the run's read and the
    resume's decision. Refused, recorded once; the same delivery again is not re-judged."""
    paused(hs, DEPLOY)
    request = request_of(hs, "c1")
    hs.gate.decide(request.id, Decision.approve(), identity=hs.alice)
    once = hs.gate.decide_once(request.id, Decision.reject("no"), user="bob", key="resume-k1",
                               via="resume")
    assert once.refused and once.code == "already_decided" and not once.replayed
    again = hs.gate.decide_once(request.id, Decision.reject("no"), user="bob",
                                key="resume-k1", via="resume")
    assert again.refused and again.replayed and again.code == "already_decided"
    assert len(hs.gate.store.decisions(request.id)) == 1
    assert len(events(hs, request.id, "decision.refused")) == 1


def test_a_replayed_resume_changes_nothing(hs: Harness) -> None:
    agent, interrupts = paused(hs, DEPLOY)
    request = request_of(hs, "c1")
    command = Command(resume={interrupts[0].id: {"decisions": [{"type": "approve"}]}})
    agent.invoke(command, config())
    assert hs.ran() == ["deploy prod"]
    agent.invoke(command, config())  # delivered again
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config())
    assert hs.ran() == ["deploy prod"]
    assert len(hs.gate.store.decisions(request.id)) == 1
    assert len(events(hs, request.id, "decision.recorded")) == 1
    assert events(hs, request.id, "decision.refused") == []
    assert hs.gate.get_request(request.id).status is RequestStatus.SUCCEEDED


def test_a_delivery_is_judged_once_even_when_the_rules_change_later(hs: Harness) -> None:
    """LangGraph hands a node every earlier resume value again when it re-runs: an approve
    refused then (alice disabled) must not count once alice is enabled and says reject."""
    agent, _ = paused(hs, DEPLOY)
    request = request_of(hs, "c1")
    hs.gate.disable_user("alice")  # refused at once: the name is read at each decision
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config())
    assert "identity_disabled" in out["__interrupt__"][0].value["signoff"]["note"]
    hs.gate.enable_user("alice")
    out = agent.invoke(Command(resume={"decisions": [{"type": "reject", "message": "no"}]}),
                       config())
    assert "__interrupt__" not in out
    assert hs.ran() == []
    assert hs.gate.get_request(request.id).status is RequestStatus.REJECTED
    assert [d.kind for d in hs.gate.store.decisions(request.id)] == [DecisionKind.REJECT]


def test_a_removed_user_is_refused(hs: Harness) -> None:
    agent, _ = paused(hs, DEPLOY, opt_in="bob")
    request = request_of(hs, "c1")
    hs.gate.remove_user("bob")
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config())
    assert out.get("__interrupt__") and hs.ran() == []
    assert hs.gate.store.decisions(request.id) == []
    assert hs.gate.get_request(request.id).status is RequestStatus.PENDING


@pytest.mark.parametrize("value", [
    {"decisions": [{"type": "approve"}, {"type": "approve"}]},  # two decisions, one call
    {"decisions": "approve"},
    {"type": "frobnicate"},
    {"type": "respond"},  # a response without a message
    [{"type": "accept"}, {"type": "accept"}],
])
def test_a_malformed_resume_is_a_wake_up_and_says_so(
        hs: Harness, value: Any, caplog: pytest.LogCaptureFixture) -> None:
    agent, _ = paused(hs, DEPLOY)
    request = request_of(hs, "c1")
    with caplog.at_level(logging.INFO, logger="signoff.adapters.langchain"):
        out = agent.invoke(Command(resume=value), config())
    [again] = out["__interrupt__"]
    assert "not taken as a decision" in again.value["signoff"]["note"]
    assert any("only a wake-up" in r.getMessage() for r in caplog.records)
    assert hs.ran() == [] and hs.gate.store.decisions(request.id) == []
    assert hs.gate.get_request(request.id).status is RequestStatus.PENDING


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["type", "decisions", "edited_action", "name", "args",
                                       "message", "action", "wake"]) | st.text(max_size=5),
                      inner, max_size=4),
    max_leaves=20)
TYPES = st.sampled_from(["approve", "edit", "reject", "respond", "accept", "response",
                         "ignore", "x", ""])


@settings(max_examples=300, deadline=None)
@given(value=JSON | st.builds(lambda t, rest: {**rest, "type": t}, TYPES,
                              st.dictionaries(st.text(max_size=8), JSON, max_size=3))
       | st.builds(lambda t, rest: {"decisions": [{**rest, "type": t}]}, TYPES,
                   st.dictionaries(st.sampled_from(["message", "edited_action", "args"]),
                                   JSON, max_size=2)))
def test_reading_any_resume_value_never_raises(value: Any) -> None:
    read = resume_decision(value, "deploy")
    assert read.decision is None or read.kind is not None


# ---- without the opt-in -------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    *(sent for sent, _ in CASES.values()),
    {"decisions": [{"type": "approve"}]},
    {"decisions": [CASES["reject"][0]]},
    [{"type": "accept", "args": None}],
    [{"type": "response", "args": "done"}],
])
def test_without_the_opt_in_a_resume_is_only_a_wake_up(hs: Harness, value: Any) -> None:
    agent, _ = paused(hs, DEPLOY, opt_in=None)
    request = request_of(hs, "c1")
    out = agent.invoke(Command(resume=value), config())
    assert out.get("__interrupt__")  # still pending: it pauses again
    out = agent.invoke(Command(resume={out["__interrupt__"][0].id: value}), config())
    assert out.get("__interrupt__")
    assert hs.ran() == []
    assert hs.gate.get_request(request.id).status is RequestStatus.PENDING
    assert hs.gate.store.decisions(request.id) == []
    assert events(hs, request.id, "decision.refused") == []
    # The inbox still decides it, and a wake-up runs it.
    hs.gate.decide(request.id, Decision.approve(), identity=hs.alice)
    agent.invoke(resume_command(agent, config()), config())
    assert hs.ran() == ["deploy prod"]


# ---- the opt-in itself ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["agent-bot", "bot"])
def test_an_agent_identity_can_never_be_named(hs: Harness, name: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        SignoffMiddleware(hs.gate, resume_decisions_as=name)
    assert caught.value.code == "agent_cannot_decide"


def test_the_opt_in_names_a_user_not_an_identity_object(hs: Harness) -> None:
    with pytest.raises(ConfigurationError) as caught:
        SignoffMiddleware(hs.gate, resume_decisions_as=hs.alice)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_resume_identity"
