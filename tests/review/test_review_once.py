"""One call, one review: resumes never ask the model again (issue 13, item 8 with bug 1).

The LLM reviewer over the real ``openai`` client against the scripted chat-completions
server; the server's hit count is the oracle. The review's record is stored with the
request (or on its own for an approved call) and in the audit.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer, Reply
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from signoff import (
    Decision,
    Gate,
    Policy,
    ProposalKind,
    ReviewMode,
    RunContext,
    SqliteStore,
    ToolCall,
)
from signoff.adapters.langchain import SignoffMiddleware
from signoff.adapters.langchain.run import SignoffContext, pending_request_ids, resume_command
from signoff.review import ChatCompletionsReviewer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "adapters"))
from lc_helpers import ScriptedModel, calls

POLICY = """
[policy]
version = "review-once"
gated = ["deploy"]
[tools.deploy]
"""


def _gate(server: ChatServer, tmp_path: Path) -> Gate:
    reviewer = ChatCompletionsReviewer("scripted-model", base_url=server.base_url,
                                       api_key="test-key")
    gate = Gate(Policy.from_toml(POLICY, reviewer=reviewer), SqliteStore(tmp_path / "s.db"))
    return gate


def _events(gate: Gate, kind: str) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in gate.store.audit_events() if e.kind == kind]


def test_an_escalated_call_is_reviewed_once_however_often_it_is_proposed(
        chat_server: ChatServer, tmp_path: Path) -> None:
    chat_server.script(Reply.verdict("escalate", "prod needs a person"))
    chat_server.default = Reply.verdict("approve", "fine")  # what a second ask would get
    gate = _gate(chat_server, tmp_path)
    _, token = gate.add_user("ann")
    context = RunContext(thread_id="t", run_id="r", review_mode=ReviewMode.AUTO,
                         intent="ship it")
    call = ToolCall(id="d1", name="deploy", args={"env": "prod"})
    first = gate.propose(call, context)
    assert first.kind is ProposalKind.PENDING and first.request is not None
    for _ in range(3):  # resumes, node re-runs
        again = gate.propose(call, context)
        assert again.kind is ProposalKind.PENDING
    gate.decide(first.request.id, Decision.approve(), identity=gate.authenticate(token))
    assert gate.propose(call, context).kind is ProposalKind.DECIDED
    gate.resume(first.request.id)
    assert chat_server.hits == 1
    review = gate.get_request(first.request.id).review
    assert review is not None
    assert (review["approve"], review["reviewer"], review["model"]) == \
        (False, "openai", "scripted-model")
    assert review["prompt_hash"] and review["latency_ms"] is not None
    assert review["tokens"]
    assert _events(gate, "request.created")[0]["review"]["reason"] == "prod needs a person"
    gate.close()


def test_an_approved_call_is_reviewed_once_and_audited(chat_server: ChatServer,
                                                       tmp_path: Path) -> None:
    chat_server.script(Reply.verdict("approve", "staging is routine"))
    chat_server.default = Reply.verdict("escalate", "a second opinion")
    gate = _gate(chat_server, tmp_path)
    context = RunContext(thread_id="t", run_id="r", review_mode=ReviewMode.AUTO)
    call = ToolCall(id="d2", name="deploy", args={"env": "staging"})
    for _ in range(3):
        assert gate.propose(call, context).kind is ProposalKind.ALLOWED
    assert chat_server.hits == 1
    allowed = _events(gate, "call.allowed")
    assert allowed and allowed[0]["review"]["reason"] == "staging is routine"
    # Other arguments under the same id are another call: the reviewer is asked about it.
    other = ToolCall(id="d2", name="deploy", args={"env": "prod"})
    gate.propose(other, context)
    assert chat_server.hits == 2
    gate.close()


@pytest.mark.slow
def test_a_langchain_run_asks_the_model_once_across_resumes(chat_server: ChatServer,
                                                            tmp_path: Path) -> None:
    chat_server.script(Reply.verdict("escalate", "unsure"))
    chat_server.default = Reply.verdict("approve", "fine")
    gate = _gate(chat_server, tmp_path)
    _, token = gate.add_user("ann")
    ran: list[str] = []

    @tool
    def deploy(env: str) -> str:
        """Deploy."""
        ran.append(env)
        return f"deployed {env}"

    conn = sqlite3.connect(tmp_path / "cp.db", check_same_thread=False)
    agent = create_agent(ScriptedModel(responses=[calls(("deploy", {"env": "prod"}, "c1")),
                                                  AIMessage(content="done")]),
                         tools=[deploy], middleware=[SignoffMiddleware(gate)],
                         checkpointer=SqliteSaver(conn), context_schema=SignoffContext)
    cfg: dict[str, Any] = {"configurable": {"thread_id": "t-lc", "review_mode": "auto"}}
    agent.invoke({"messages": [{"role": "user", "content": "ship to prod"}]}, cfg)
    for _ in range(2):  # woken before anyone decided: pauses again, no new review
        out = agent.invoke(resume_command(agent, cfg), cfg)
        assert out.get("__interrupt__")
    [request_id] = pending_request_ids(agent, cfg)
    gate.decide(request_id, Decision.edit({"env": "canary"}, reason="canary first"),
                identity=gate.authenticate(token))
    out = agent.invoke(resume_command(agent, cfg), cfg)
    assert ran == ["canary"]
    assert next(m.content for m in out["messages"] if isinstance(m, ToolMessage)) \
        .startswith("deployed canary")
    assert chat_server.hits == 1
    body = chat_server.requests[0]
    assert "tools" not in body and "functions" not in body
    conn.close()
    gate.close()


def test_a_kept_yes_does_not_outrun_a_tightened_policy(chat_server: ChatServer,
                                                       tmp_path: Path) -> None:
    """A review kept under one policy is recalled under the next only within its bound: a
    lowered max_risk sends the same call to a human, without asking the model again."""
    chat_server.script(Reply.verdict("approve", "fine"))
    reviewer = ChatCompletionsReviewer("scripted-model", base_url=chat_server.base_url,
                                       api_key="test-key")
    medium = POLICY.replace("[tools.deploy]", '[tools.deploy]\nrisk = "medium"')
    loose = medium + '[review]\nmax_risk = "high"\n'
    tight = medium + '[review]\nmax_risk = "low"\n'
    context = RunContext(thread_id="t", run_id="r", review_mode=ReviewMode.AUTO)
    call = ToolCall(id="d3", name="deploy", args={"env": "prod"})
    store = SqliteStore(tmp_path / "s.db")
    before = Gate(Policy.from_toml(loose, reviewer=reviewer), store)
    assert before.propose(call, context).kind is ProposalKind.ALLOWED
    after = Gate(Policy.from_toml(tight, reviewer=reviewer), store)
    again = after.propose(call, context)
    assert again.kind is ProposalKind.PENDING
    assert again.request is not None and again.request.review is not None
    assert "max_risk" in again.request.review["reason"]
    assert chat_server.hits == 1
    before.flush()
    store.close()
