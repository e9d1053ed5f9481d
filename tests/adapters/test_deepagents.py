"""signoff in real deepagents runs (``create_deep_agent``) with deepagents' own backends,
driven by scripted chat models: the preset's virtual paths, outside paths, a gated call
paused and run once, ``task`` subagents through the child bridge."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepagents", reason="deepagents is not installed ('signoff[deepagents]')")

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend, LocalShellBackend
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from lc_helpers import ScriptedModel, calls

from signoff import Decision, Gate, Policy, SqliteStore
from signoff.adapters.deepagents import check_backend, gate_subagents
from signoff.adapters.langchain import SignoffContext, SignoffMiddleware, wait_and_resume
from signoff.errors import PolicyError
from signoff.identity import Identity
from signoff.model import RequestStatus
from signoff.policy.starter import starter_toml

USER = {"messages": [{"role": "user", "content": "do the work"}]}


@dataclass
class Deep:
    root: Path
    gate: Gate
    ann: Identity
    outside: Path
    closers: list[Any] = field(default_factory=list)

    def policy(self, *, virtual: bool = True, outside: str = "approve") -> Policy:
        text = starter_toml(str(self.root), "deepagents").replace(
            'outside = "approve"', f'outside = "{outside}"')
        if not virtual:
            text = text.replace("virtual = true", "virtual = false")
        return Policy.from_toml(text, source="deepagents.toml")

    def regate(self, policy: Policy) -> Gate:
        self.gate = Gate(policy, self.gate.store, agent="deep-agent")
        return self.gate


@pytest.fixture
def deep(tmp_path: Path) -> Iterator[Deep]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text("# notes\nship on friday\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("outside the workspace\n")
    store = SqliteStore(tmp_path / "signoff.db")
    starter = Policy.from_toml(starter_toml(str(root), "deepagents"), source="deepagents.toml")
    gate = Gate(starter, store, agent="deep-agent")
    _, token = gate.add_user("ann")
    made = Deep(root=root, gate=gate, ann=gate.authenticate(token), outside=outside)
    yield made
    store.close()


def answers(out: dict[str, Any]) -> dict[str, ToolMessage]:
    return {str(m.tool_call_id): m for m in out["messages"] if isinstance(m, ToolMessage)}


BACKENDS = {
    "local-shell-virtual": lambda root: LocalShellBackend(root_dir=root, virtual_mode=True),
    "local-shell-real": lambda root: LocalShellBackend(root_dir=root, virtual_mode=False),
    "filesystem-virtual": lambda root: FilesystemBackend(root_dir=root, virtual_mode=True),
}


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_file_tools_under_each_backend(deep: Deep, kind: str) -> None:
    backend = BACKENDS[kind](deep.root)
    virtual = backend.virtual_mode
    gate = deep.regate(deep.policy(virtual=virtual, outside="deny"))
    inside = "/notes.md" if virtual else str(deep.root / "notes.md")
    out_md = "/out.md" if virtual else str(deep.root / "out.md")
    # Outside: above the virtual root, or a real path beside the workspace.
    beyond = "/../secret.txt" if virtual else str(deep.outside)
    model = ScriptedModel(responses=[
        calls(("read_file", {"file_path": inside}, "r1")),
        calls(("write_file", {"file_path": out_md, "content": "written by the agent\n"}, "w1")),
        calls(("read_file", {"file_path": beyond}, "r2")),
        calls(("ls", {"path": "/" if virtual else str(deep.root)}, "l1")),
        AIMessage(content="done")])
    agent = create_deep_agent(model=model, backend=backend, middleware=[SignoffMiddleware(gate)],
                              checkpointer=InMemorySaver())
    out = agent.invoke(USER, {"configurable": {"thread_id": f"files-{kind}"}})
    got = answers(out)
    assert got["r1"].status == "success" and "ship on friday" in str(got["r1"].content)
    assert (deep.root / "out.md").read_text() == "written by the agent\n"  # landed inside
    assert got["r2"].status == "error"
    assert "outside workspace" in str(got["r2"].content)
    assert "outside the workspace" not in str(got["r2"].content)  # never read
    assert got["l1"].status == "success" and "notes.md" in str(got["l1"].content)
    assert gate.store.list_requests(status=None) == []  # nothing needed a human


def test_an_outside_path_waits_for_a_human_when_the_policy_says_approve(deep: Deep) -> None:
    gate = deep.regate(deep.policy(outside="approve"))
    model = ScriptedModel(responses=[calls(("read_file", {"file_path": "/../secret.txt"}, "o1")),
                                     AIMessage(content="done")])
    agent = create_deep_agent(model=model, backend=LocalShellBackend(root_dir=deep.root),
                              middleware=[SignoffMiddleware(gate)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "outside"}}
    out = agent.invoke(USER, config)
    assert "__interrupt__" in out
    (request,) = gate.store.list_requests()
    assert request.tool == "read_file" and request.risk.value == "high"
    gate.decide(request.id, Decision.approve(), identity=deep.ann)
    out = wait_and_resume(agent, gate, config, timeout=10)
    # deepagents' own virtual root then refuses the climb: signoff let it through only
    # because a human said yes, and the backend is still the backend.
    assert gate.get_request(request.id).status in (RequestStatus.SUCCEEDED, RequestStatus.FAILED)
    assert "o1" in answers(out)


def test_a_gated_execute_pauses_and_runs_once_after_approval(deep: Deep) -> None:
    model = ScriptedModel(responses=[
        calls(("execute", {"command": "echo built >> ledger.txt"}, "x1")),
        AIMessage(content="done")])
    agent = create_deep_agent(model=model, backend=LocalShellBackend(root_dir=deep.root),
                              middleware=[SignoffMiddleware(deep.gate)],
                              checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "gated"}}
    out = agent.invoke(USER, config)
    assert "__interrupt__" in out
    assert not (deep.root / "ledger.txt").exists()
    (request,) = deep.gate.store.list_requests()
    deep.gate.decide(request.id, Decision.approve(), identity=deep.ann)
    out = wait_and_resume(agent, deep.gate, config, timeout=10)
    assert out["messages"][-1].content == "done"
    for _ in range(2):  # the same wake-up again runs nothing twice
        agent.invoke(_wake(agent, config), config)
    assert (deep.root / "ledger.txt").read_text() == "built\n"
    assert deep.gate.get_request(request.id).status is RequestStatus.SUCCEEDED


def _wake(agent: Any, config: dict[str, Any]) -> Any:
    from langgraph.types import Command

    state = agent.get_state(config)
    return Command(resume={i.id: {"wake": True} for i in state.interrupts} or {})


def subagent_agent(deep: Deep, parent: list[Any], child: list[Any], *,
                   wait: float = 10.0) -> tuple[Any, SignoffMiddleware]:
    backend = LocalShellBackend(root_dir=deep.root)
    middleware = SignoffMiddleware(deep.gate, subagent_wait=wait)
    agent = create_deep_agent(
        model=ScriptedModel(responses=parent), backend=backend, middleware=[middleware],
        subagents=gate_subagents(middleware, model=ScriptedModel(responses=child),
                                 backend=backend),
        checkpointer=InMemorySaver())
    return agent, middleware


def approve_when_asked(deep: Deep, seen: list[Any]) -> threading.Thread:
    def approve() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pending = deep.gate.store.list_requests()
            if pending:
                seen.extend(pending)
                deep.gate.decide(pending[0].id, Decision.approve(), identity=deep.ann)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=approve)
    thread.start()
    return thread


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_task_subagents_ask_surfaces_labelled_with_its_parent(deep: Deep, face: str) -> None:
    import asyncio

    task = {"description": "deploy it", "subagent_type": "general-purpose"}
    agent, _ = subagent_agent(
        deep, [calls(("task", task, "p1")), AIMessage(content="parent done")],
        [calls(("execute", {"command": "echo deployed >> ledger.txt"}, "k1")),
         AIMessage(content="child done")])
    seen: list[Any] = []
    approver = approve_when_asked(deep, seen)
    config = {"configurable": {"thread_id": "with-child"}}
    out = (agent.invoke(USER, config) if face == "sync"
           else asyncio.run(agent.ainvoke(USER, config)))
    approver.join()
    assert "__interrupt__" not in out  # the child waited in place; the parent never paused
    (asked,) = seen
    assert asked.parent_call == "p1" and asked.tool == "execute"
    assert asked.thread_id == "with-child"
    parent_run = agent.get_state(config).values["signoff_run"]["run_id"]
    assert asked.run_id and asked.run_id != parent_run  # the child's own run
    assert answers(out)["p1"].content == "child done"
    assert (deep.root / "ledger.txt").read_text() == "deployed\n"
    assert deep.gate.get_request(asked.id).status is RequestStatus.SUCCEEDED


def test_a_subagent_not_reviewed_by_signoff_is_never_started(deep: Deep) -> None:
    model = ScriptedModel(responses=[
        calls(("task", {"description": "rm it", "subagent_type": "general-purpose"}, "p1")),
        AIMessage(content="done")])
    # The plain drop-in: deepagents' default general-purpose subagent gets none of it.
    agent = create_deep_agent(model=model, backend=LocalShellBackend(root_dir=deep.root),
                              middleware=[SignoffMiddleware(deep.gate)],
                              checkpointer=InMemorySaver())
    out = agent.invoke(USER, {"configurable": {"thread_id": "ungated"}})
    answer = answers(out)["p1"]
    assert answer.status == "error"
    assert answer.artifact["signoff"]["code"] == "ungated_subagent"
    assert len(model.prompts) == 2  # the parent's two turns: the child model never ran
    assert deep.gate.store.list_requests(status=None) == []


def test_a_subagent_inherits_its_parents_unattended_interaction(deep: Deep) -> None:
    agent, _ = subagent_agent(
        deep, [calls(("task", {"description": "x", "subagent_type": "general-purpose"}, "p1")),
               AIMessage(content="parent done")],
        [calls(("execute", {"command": "echo x >> ledger.txt"}, "k1")),
         AIMessage(content="child done")])
    agent.invoke(USER, {"configurable": {"thread_id": "night"}},
                 context=SignoffContext(interaction_mode="scheduled"))
    assert deep.gate.store.list_requests(status=None) == []  # BLOCKED, nobody was asked
    assert not (deep.root / "ledger.txt").exists()


def test_a_subagent_runs_beside_its_parents_paused_sibling(deep: Deep) -> None:
    """The parent's turn asks for one call and starts a subagent in another: the child's
    run is part of the parent's live tool call, not a new run on a waiting thread."""
    agent, _ = subagent_agent(
        deep, [calls(("execute", {"command": "echo a >> ledger.txt"}, "s1"),
                     ("task", {"description": "read", "subagent_type": "general-purpose"},
                      "p1")),
               AIMessage(content="parent done")],
        [calls(("read_file", {"file_path": "/notes.md"}, "k1")),
         AIMessage(content="child read the notes")])
    config = {"configurable": {"thread_id": "siblings"}}
    out = agent.invoke(USER, config)
    assert "__interrupt__" in out  # the sibling waits
    state = agent.get_state(config)
    messages = state.values["messages"]
    assert any(isinstance(m, ToolMessage) and m.tool_call_id == "p1"
               and m.content == "child read the notes" for m in messages)


def test_a_subagent_runs_in_its_parents_mode(deep: Deep) -> None:
    agent, _ = subagent_agent(
        deep, [calls(("task", {"description": "x", "subagent_type": "general-purpose"}, "p1")),
               AIMessage(content="parent done")],
        [calls(("execute", {"command": "echo full >> ledger.txt"}, "k1")),
         AIMessage(content="child done")])
    agent.invoke(USER, {"configurable": {"thread_id": "full"}},
                 context=SignoffContext(review_mode="full"))
    assert (deep.root / "ledger.txt").read_text() == "full\n"  # full mode: no review
    assert deep.gate.store.list_requests(status=None) == []


def test_a_policy_that_reads_paths_otherwise_than_the_backend_is_refused(deep: Deep) -> None:
    virtual_policy = deep.policy(virtual=True)
    with pytest.raises(PolicyError) as caught:
        check_backend(virtual_policy, LocalShellBackend(root_dir=deep.root, virtual_mode=False))
    assert caught.value.code == "backend_mismatch"
    assert "[tools.read_file] virtual = true" in caught.value.message
    with pytest.raises(PolicyError) as caught:
        check_backend(virtual_policy, FilesystemBackend(root_dir=deep.outside.parent))
    assert "root" in caught.value.message
    check_backend(virtual_policy, LocalShellBackend(root_dir=deep.root))  # matches: no error
    middleware = SignoffMiddleware(Gate(virtual_policy, deep.gate.store))
    with pytest.raises(PolicyError):
        gate_subagents(middleware, model=ScriptedModel(responses=[]),
                       backend=LocalShellBackend(root_dir=deep.root, virtual_mode=False))


def test_gate_subagents_adds_the_middleware_to_every_declarative_subagent(deep: Deep) -> None:
    middleware = SignoffMiddleware(deep.gate)
    model = ScriptedModel(responses=[])
    specs = gate_subagents(middleware, model=model, subagents=[
        {"name": "researcher", "description": "reads", "system_prompt": "read"},
        {"name": "compiled", "description": "opaque", "runnable": object()}])
    names = [s["name"] for s in specs]
    assert names == ["general-purpose", "researcher", "compiled"]
    assert specs[1]["middleware"] == [middleware]
    assert "middleware" not in specs[2]  # a compiled graph is the caller's to gate
    assert middleware.gated_subagents == {"general-purpose", "researcher"}


@pytest.mark.slow
def test_the_example_runs() -> None:
    import subprocess
    import sys

    example = Path(__file__).parents[2] / "examples" / "deepagents_agent.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[manual] waiting for a person: execute" in out
    assert "[manual] ask_user offered to the model: True" in out
    assert "[auto] waiting for a person: schedule_task" in out  # high risk: a person
    assert "[auto] waiting for a person: execute" not in out  # medium: the reviewer
    assert "[full] ask_user offered to the model: False" in out
    assert "[full] task: 'wrote /summary.md'" in out
    assert "workspace: ablation.txt, baseline.txt, notes.md, summary.md" in out
    assert "audit verified: True" in out


def test_a_subagent_with_a_middleware_of_its_own_runs_beside_a_paused_sibling(
        deep: Deep) -> None:
    """A compiled subagent built by the application with its own SignoffMiddleware (another
    instance, the same gate), named in ``gated_subagents``: started, and not refused for
    the parent's paused sibling."""
    child_model = ScriptedModel(responses=[
        calls(("read_file", {"file_path": "/notes.md"}, "k1")),
        calls(("read_file", {"file_path": "/notes.md"}, "k2")),
        AIMessage(content="child read twice")])
    backend = LocalShellBackend(root_dir=deep.root)
    child = create_deep_agent(model=child_model, backend=backend,
                              middleware=[SignoffMiddleware(deep.gate)])
    middleware = SignoffMiddleware(deep.gate, gated_subagents=["reader"])
    parent = ScriptedModel(responses=[
        calls(("execute", {"command": "echo a >> ledger.txt"}, "s1"),
              ("task", {"description": "read", "subagent_type": "reader"}, "p1")),
        AIMessage(content="parent done")])
    agent = create_deep_agent(
        model=parent, backend=backend, middleware=[middleware],
        subagents=[{"name": "reader", "description": "reads", "runnable": child}],
        checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "own-child"}}
    out = agent.invoke(USER, config)
    assert "__interrupt__" in out  # the sibling waits; the child was not refused
    messages = agent.get_state(config).values["messages"]
    assert any(isinstance(m, ToolMessage) and m.tool_call_id == "p1"
               and m.content == "child read twice" for m in messages)


def test_a_reviewed_edit_shows_its_diff_and_refuses_if_the_file_changed(deep: Deep) -> None:
    """The preset declares what write_file and edit_file will write: a request for one
    carries the diff against the file as proposed, bound to its version."""
    text = starter_toml(str(deep.root), "deepagents").replace(
        'gated = ["execute", "run_in_background", "schedule_task", "delete"]',
        'gated = ["execute", "run_in_background", "schedule_task", "delete", "edit_file"]')
    gate = deep.regate(Policy.from_toml(text, source="deepagents.toml"))
    edit = {"file_path": "/notes.md", "old_string": "friday", "new_string": "monday"}
    model = ScriptedModel(responses=[calls(("edit_file", edit, "e1")),
                                     AIMessage(content="done")])
    agent = create_deep_agent(model=model, backend=LocalShellBackend(root_dir=deep.root),
                              middleware=[SignoffMiddleware(gate)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "edit"}}
    agent.invoke(USER, config)
    (request,) = gate.store.list_requests()
    (change,) = gate.get_request(request.id).changes
    assert change["kind"] == "diff"
    assert "-ship on friday" in change["diff"] and "+ship on monday" in change["diff"]
    (deep.root / "notes.md").write_text("# notes\nship on sunday\n")  # changed since
    gate.decide(request.id, Decision.approve(), identity=deep.ann)
    out = wait_and_resume(agent, gate, config, timeout=10)
    assert gate.get_request(request.id).status is RequestStatus.INVALIDATED
    answer = str(answers(out)["e1"].content)
    assert "resource_changed" in answer and "did not run" in answer
    assert (deep.root / "notes.md").read_text() == "# notes\nship on sunday\n"  # not edited


@pytest.mark.parametrize("name", ["General-Purpose", "general-purpose ", "general\x00purpose",
                                  "g" * 8192, None, ["general-purpose"]])
def test_a_subagent_name_spelled_otherwise_starts_nothing(deep: Deep, name: Any) -> None:
    """Attack: reach the unreviewed default subagent by another spelling of a reviewed one,
    a NUL, an 8 KB name, or a name that is not a string — refused, nothing started."""
    agent, middleware = subagent_agent(
        deep, [calls(("task", {"description": "x", "subagent_type": name}, "p1")),
               AIMessage(content="done")],
        [calls(("execute", {"command": "echo ran >> ledger.txt"}, "k1")),
         AIMessage(content="child done")])
    assert "general-purpose" in middleware.gated_subagents
    out = agent.invoke(USER, {"configurable": {"thread_id": "spelled"}})
    answer = answers(out)["p1"]
    assert answer.status == "error"
    assert answer.artifact["signoff"]["code"] == "ungated_subagent"
    assert not (deep.root / "ledger.txt").exists()
    assert deep.gate.store.list_requests(status=None) == []
