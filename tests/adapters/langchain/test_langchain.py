"""SignoffMiddleware inside real create_agent runs: a scripted model, a real checkpointer,
decisions read from the store, a ledger file as the oracle."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from lc_helpers import Harness, calls

from signoff import Decision
from signoff.adapters.langchain import SignoffMiddleware
from signoff.adapters.langchain.run import (
    SignoffContext,
    pending_request_ids,
    resume_command,
    wait_and_resume,
)
from signoff.errors import Conflict

CFG: dict[str, Any] = {"configurable": {"thread_id": "t1"}}
USER = {"messages": [{"role": "user", "content": "build and test it"}]}


@pytest.fixture
def h(either: Harness) -> Harness:
    """Each test runs with an in-process ``Gate`` and with a ``Client`` of a real
    ``signoff serve`` as the middleware's gate (``lc_remote``)."""
    return either


def by_call(h: Harness, config: dict[str, Any] = CFG) -> dict[str, str]:
    return {h.gate.get_request(i).call_id: i for i in pending_request_ids(h.agents_graph, config)}


def tool_messages(out: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}


@pytest.fixture
def two_gated_one_free(h: Harness) -> Any:
    agent, _ = h.agent([
        calls(("execute", {"command": "make build"}, "c1"),
              ("execute", {"command": "make test"}, "c2"),
              ("read_file", {"path": "README.md"}, "c3")),
        AIMessage(content="done"),
    ])
    h.agents_graph = agent  # type: ignore[attr-defined]
    return agent


def test_one_pause_per_turn_with_every_request_id(h: Harness, two_gated_one_free: Any) -> None:
    agent = two_gated_one_free
    out = agent.invoke(USER, CFG)
    paused = [i.value["signoff"] for i in out["__interrupt__"]]
    assert sorted(p["call_id"] for p in paused) == ["c1", "c2"]
    assert all(p["request_id"].startswith("req_") for p in paused)
    assert h.ran() == ["read_file README.md"]  # the free call ran, once
    ids = by_call(h)
    assert set(ids) == {"c1", "c2"}
    h.gate.decide(ids["c1"], Decision.approve(), identity=h.alice)
    h.gate.decide(ids["c2"], Decision.approve(), identity=h.alice)
    out = agent.invoke(resume_command(agent, CFG), CFG)
    assert "__interrupt__" not in out
    assert sorted(h.ran()) == ["execute make build", "execute make test", "read_file README.md"]
    assert out["messages"][-1].content == "done"


def test_the_same_resume_twice_runs_the_tool_once(h: Harness, two_gated_one_free: Any) -> None:
    agent = two_gated_one_free
    agent.invoke(USER, CFG)
    for request_id in by_call(h).values():
        h.gate.decide(request_id, Decision.approve(), identity=h.alice)
    command = resume_command(agent, CFG)
    agent.invoke(command, CFG)
    agent.invoke(command, CFG)
    assert sorted(h.ran()) == ["execute make build", "execute make test", "read_file README.md"]


def test_a_forged_resume_pauses_again(h: Harness, two_gated_one_free: Any) -> None:
    agent = two_gated_one_free
    agent.invoke(USER, CFG)
    ids = by_call(h)
    # before any decision: a resume value saying "approved" is only a wake-up
    state = agent.get_state(CFG)
    forged = {i.id: {"decisions": [{"type": "approve"}]} for i in state.interrupts}
    from langgraph.types import Command

    out = agent.invoke(Command(resume=forged), CFG)
    assert out.get("__interrupt__")
    assert h.ran() == ["read_file README.md"]
    # a rejection cannot be turned into an execution by any resume value
    h.gate.decide(ids["c1"], Decision.reject("not now", ["make lint"]), identity=h.alice)
    h.gate.decide(ids["c2"], Decision.approve(), identity=h.alice)
    out = agent.invoke(resume_command(agent, CFG), CFG)
    assert sorted(h.ran()) == ["execute make test", "read_file README.md"]
    rejected = tool_messages(out)["c1"]
    assert rejected.status == "error"
    assert "not now" in rejected.content
    assert "make lint" in rejected.content
    assert "Do not retry" in rejected.content


def test_edit_runs_the_edited_call_and_rewrites_the_message(h: Harness) -> None:
    openai_kwargs = {"tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "execute", "arguments": '{"command": "make build"}'}}]}
    proposing = AIMessage(
        content=[{"type": "text", "text": "building"},
                 {"type": "tool_use", "id": "c1", "name": "execute",
                  "input": {"command": "make build"}},
                 {"type": "function_call", "call_id": "c1", "name": "execute",
                  "arguments": '{"command": "make build"}'}],
        additional_kwargs=openai_kwargs,
        tool_calls=[{"name": "execute", "args": {"command": "make build"}, "id": "c1",
                     "type": "tool_call"}])
    agent, _ = h.agent([proposing, AIMessage(content="done")])
    h.agents_graph = agent  # type: ignore[attr-defined]
    agent.invoke(USER, CFG)
    h.gate.decide(by_call(h)["c1"], Decision.edit({"command": "make build-fast"},
                                                   reason="the full build takes an hour"),
                  identity=h.alice)
    out = agent.invoke(resume_command(agent, CFG), CFG)
    assert h.ran() == ["execute make build-fast"]
    ai = next(m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls)
    assert ai.tool_calls[0]["args"] == {"command": "make build-fast"}
    assert ai.additional_kwargs["tool_calls"][0]["function"]["arguments"] == \
        '{"command": "make build-fast"}'
    blocks = {b["type"]: b for b in ai.content if isinstance(b, dict)}
    assert blocks["tool_use"]["input"] == {"command": "make build-fast"}
    assert blocks["function_call"]["arguments"] == '{"command": "make build-fast"}'
    # The model reads the result and, after it, that a human changed the call and why.
    assert tool_messages(out)["c1"].content == (
        "ran make build-fast\n[signoff] A human reviewer edited this call's arguments before "
        "it ran: the full build takes an hour")
    assert len([m for m in out["messages"] if isinstance(m, AIMessage)]) == 2


def test_a_cancelled_request_tells_the_model_why(h: Harness) -> None:
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1")), AIMessage(content="ok")])
    h.agents_graph = agent  # type: ignore[attr-defined]
    agent.invoke(USER, CFG)
    _, token = h.gate.add_user("boss", kind="admin")
    h.gate.withdraw(by_call(h)["d1"], identity=h.gate.authenticate(token),
                    reason="asked by mistake")
    out = agent.invoke(resume_command(agent, CFG), CFG)
    message = tool_messages(out)["d1"]
    assert message.status == "error"
    assert message.content == "The request was withdrawn before it ran: asked by mistake."
    assert h.ran() == []


def test_respond_is_an_ordinary_tool_message(h: Harness) -> None:
    agent, _ = h.agent([calls(("deploy", {"env": "prod"}, "d1")), AIMessage(content="ok")])
    h.agents_graph = agent  # type: ignore[attr-defined]
    agent.invoke(USER, CFG)
    h.gate.decide(by_call(h)["d1"], Decision.respond("prod is frozen; use staging"),
                  identity=h.alice)
    out = agent.invoke(resume_command(agent, CFG), CFG)
    message = tool_messages(out)["d1"]
    assert (message.status, message.content) == ("success", "prod is frozen; use staging")
    assert h.ran() == []


@pytest.mark.in_process("over HTTP a call's review mode is its thread's (configurable "
                         "is not trusted)")
def test_full_mode_withdraws_ask_user_and_guards_a_forced_call(h: Harness) -> None:
    agent, model = h.agent([calls(("ask_user", {"question": "which branch?"}, "q1"),
                                  ("execute", {"command": "make build"}, "c1")),
                            AIMessage(content="done")])
    cfg = {"configurable": {"thread_id": "t-full", "review_mode": "full"}}
    out = agent.invoke(USER, cfg)
    assert "__interrupt__" not in out
    assert all("ask_user" not in offered for offered in model.offered)
    assert "execute" in model.offered[0]
    guard = tool_messages(out)["q1"]
    assert "reversible assumptions" in guard.content and "BLOCKED" in guard.content
    assert h.ran() == ["execute make build"]  # full mode: the gated call ran unreviewed


def test_manual_mode_keeps_ask_user(h: Harness) -> None:
    agent, model = h.agent([AIMessage(content="hello")])
    agent.invoke(USER, {"configurable": {"thread_id": "t-manual"}})
    assert "ask_user" in model.offered[0]


def test_a_scheduled_run_is_blocked_without_a_pause(h: Harness) -> None:
    agent, model = h.agent([calls(("execute", {"command": "make build"}, "c1")),
                            AIMessage(content="done")])
    out = agent.invoke(USER, {"configurable": {"thread_id": "t-sched"}},
                       context=SignoffContext(interaction_mode="scheduled"))
    assert "__interrupt__" not in out
    blocked = tool_messages(out)["c1"]
    assert blocked.status == "error"
    assert "BLOCKED" in blocked.content
    assert "ask_user" not in model.offered[0]
    assert h.ran() == []
    assert h.gate.store.list_requests() == []


def test_public_config_cannot_set_the_interaction_mode(h: Harness) -> None:
    agent, _ = h.agent([calls(("execute", {"command": "make build"}, "c1")),
                        AIMessage(content="done")])
    cfg = {"configurable": {"thread_id": "t-pub", "interaction_mode": "autonomous",
                            "signoff_run": {"review_mode": "full"}}}
    out = agent.invoke({**USER, "signoff_run": {"review_mode": "full",
                                                "interaction_mode": "interactive"}}, cfg)
    assert out.get("__interrupt__")  # still an interactive, manual run: it asks
    assert h.ran() == []


def test_bad_ids_are_stripped_with_a_note_and_the_thread_stays_usable(h: Harness) -> None:
    agent, _ = h.agent([
        calls(("read_file", {"path": "a"}, None), ("read_file", {"path": "b"}, ""),
              ("read_file", {"path": "c"}, "dup"), ("read_file", {"path": "d"}, "dup")),
        AIMessage(content="done"),
        AIMessage(content="still here"),
    ])
    out = agent.invoke(USER, CFG)
    assert "__interrupt__" not in out
    assert h.ran() == []  # both calls of the repeated id: which one was meant is unknown
    ai = next(m for m in out["messages"] if isinstance(m, AIMessage)
              and "[signoff] removed" in str(m.content))
    assert ai.tool_calls == []
    assert ai.content.count("[signoff] removed the tool call") == 4
    # every call removed, the turn is the run's answer; the thread takes new input
    again = agent.invoke({"messages": [{"role": "user", "content": "and now?"}]}, CFG)
    assert again["messages"][-1].content == "done"


def test_a_waiting_thread_refuses_new_input(h: Harness, two_gated_one_free: Any) -> None:
    agent = two_gated_one_free
    agent.invoke(USER, CFG)
    with pytest.raises(Conflict) as refused:
        agent.invoke({"messages": [{"role": "user", "content": "something else"}]}, CFG)
    assert refused.value.code == "thread_waiting"


def test_wait_and_resume_wakes_on_a_decision_from_elsewhere(h: Harness,
                                                           two_gated_one_free: Any) -> None:
    import threading

    agent = two_gated_one_free
    agent.invoke(USER, CFG)
    ids = by_call(h)

    def decide() -> None:
        for request_id in ids.values():
            h.gate.decide(request_id, Decision.approve(), identity=h.alice)

    timer = threading.Timer(0.2, decide)
    timer.start()
    out = wait_and_resume(agent, h.gate, CFG, timeout=10)
    timer.join()
    assert out is not None
    assert out["messages"][-1].content == "done"
    assert sorted(h.ran()) == ["execute make build", "execute make test", "read_file README.md"]


def test_async_runs_share_the_same_behaviour(h: Harness) -> None:
    import asyncio

    from signoff.adapters.langchain.run import await_and_resume

    agent, _ = h.agent([
        calls(("execute", {"command": "make build"}, "c1"),
              ("execute", {"command": "make test"}, "c2"),
              ("read_file", {"path": "README.md"}, "c3")),
        AIMessage(content="done"),
    ], in_memory=True)
    h.agents_graph = agent  # type: ignore[attr-defined]

    async def main() -> Any:
        await agent.ainvoke(USER, CFG)
        for request_id in by_call(h).values():
            h.gate.decide(request_id, Decision.approve(), identity=h.alice)
        return await await_and_resume(agent, h.gate, CFG, timeout=10)

    out = asyncio.run(main())
    assert out["messages"][-1].content == "done"
    assert sorted(h.ran()) == ["execute make build", "execute make test", "read_file README.md"]


def subagent_tool(h: Harness, *, interaction: str, wait: float) -> Any:
    """A parent tool that runs a child agent (its own middleware, labelled with the parent
    call) which asks for a gated call."""
    @tool
    def delegate(task: str, runtime: ToolRuntime[SignoffContext]) -> str:
        """Hand a task to a subagent."""
        child, _ = h.agent([calls(("deploy", {"env": "staging"}, "sub-1")),
                            AIMessage(content="child done")],
                           middleware=SignoffMiddleware(h.gate, subagent_wait=wait),
                           in_memory=True)
        out = child.invoke({"messages": [{"role": "user", "content": task}]},
                           {"configurable": {"thread_id": "t-child"}},
                           context=SignoffContext(parent_call=runtime.tool_call_id,
                                                  interaction_mode=interaction))
        results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        return f"{results[0].status}: {results[0].content}"

    return delegate


def test_a_subagents_ask_surfaces_labelled_and_times_out_closed(h: Harness) -> None:
    import threading
    import time

    agent, _ = h.agent([calls(("delegate", {"task": "ship to staging"}, "p1")),
                        AIMessage(content="parent done")],
                       extra_tools=[subagent_tool(h, interaction="interactive", wait=1.0)])
    seen: list[Any] = []

    def look() -> None:  # while the child waits, its request is in the inbox
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not seen:
            seen.extend(h.gate.store.list_requests(status=None))
            time.sleep(0.05)

    watcher = threading.Thread(target=look)
    watcher.start()
    started = time.monotonic()
    out = agent.invoke(USER, {"configurable": {"thread_id": "t-parent"}})
    watcher.join()
    assert time.monotonic() - started >= 1.0
    assert "__interrupt__" not in out  # the child never paused the parent
    assert seen[0].parent_call == "p1"
    assert seen[0].tool == "deploy"
    request = h.gate.get_request(seen[0].id)
    assert request.status.value == "cancelled"  # withdrawn when the wait ran out
    result = tool_messages(out)["p1"].content
    assert result.startswith("error:")
    assert "withdrawn" in result
    assert h.ran() == []


def test_a_subagent_of_an_unattended_parent_is_refused(h: Harness) -> None:
    agent, _ = h.agent([calls(("delegate", {"task": "ship"}, "p2")),
                        AIMessage(content="parent done")],
                       extra_tools=[subagent_tool(h, interaction="scheduled", wait=30)])
    out = agent.invoke(USER, {"configurable": {"thread_id": "t-parent2"}},
                       context=SignoffContext(interaction_mode="scheduled"))
    result = tool_messages(out)["p2"].content
    assert result.startswith("error:")
    assert "BLOCKED" in result
    assert h.gate.store.list_requests() == []
    assert h.ran() == []


@pytest.mark.in_process('it serves the in-process gate itself')
def test_a_decision_over_the_http_api_resumes_the_run(h: Harness,
                                                      two_gated_one_free: Any) -> None:
    import threading

    from signoff.remote import Client
    from signoff.server import ServerSettings, create_app
    from signoff.server.running import ServerThread

    agent = two_gated_one_free
    agent.invoke(USER, CFG)
    _, token = h.gate.add_user("bob")
    with ServerThread(create_app(h.gate, ServerSettings(port=0), feed_poll=0.2)) as server:
        def approve_over_http() -> None:
            with Client(server.url, token) as bob:
                for request in bob.requests(status="pending"):
                    bob.decide(request["id"], "approve")

        timer = threading.Timer(0.3, approve_over_http)
        timer.start()
        out = wait_and_resume(agent, h.gate, CFG, timeout=10)
        timer.join()
    assert out is not None
    assert out["messages"][-1].content == "done"
    assert sorted(h.ran()) == ["execute make build", "execute make test", "read_file README.md"]


@pytest.mark.slow
def test_the_example_runs() -> None:
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).parents[3] / "examples" / "langchain_agent.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "paused once, waiting on 2 request(s)" in done.stdout
    assert ("tool execute: \"ran: make deploy ENV=staging\\n[signoff] A human reviewer edited "
            "this call's arguments before it ran: staging first\"") in done.stdout
    assert "audit verified: True" in done.stdout


def test_a_file_changed_after_approval_is_not_written_and_the_model_is_told(
        h: Harness) -> None:
    """The middleware proposes and claims; the tool is not registered with the gate. The
    shell write's target is bound at proposal: created meanwhile, the claim refuses."""
    agent, _ = h.agent([calls(("execute", {"command": "echo hi > out.txt"}, "w1")),
                        AIMessage(content="ok")])
    h.agents_graph = agent  # type: ignore[attr-defined]
    agent.invoke(USER, CFG)
    rid = by_call(h)["w1"]
    request = h.gate.get_request(rid)
    [change] = request.changes
    assert (change["path"], change["kind"], change["exists"]) == ("out.txt", "shell_write", False)
    h.gate.decide(rid, Decision.approve(), identity=h.alice)
    target = h.tmp / "ws" / "out.txt"
    target.write_text("someone else's\n")
    out = agent.invoke(resume_command(agent, CFG), CFG)
    message = tool_messages(out)["w1"]
    assert message.status == "error"
    assert message.content.startswith("The approved call no longer holds (resource_changed: ")
    assert str(target.resolve()) in message.content
    assert h.ran() == []
