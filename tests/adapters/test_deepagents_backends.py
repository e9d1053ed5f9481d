"""deepagents fails closed by itself: the preset (virtual file paths) over a backend that
reads real paths never returns a file outside the workspace — in real
``create_deep_agent`` runs over deepagents' own backends, driven by scripted chat models,
with and without ``gate_subagents``, and without the application calling ``check_backend``.

Two layers, each tested alone too: the middleware checks the backend of every deepagents
file tool it sees (``backend_mismatch`` before any tool runs), and the policy judges a
virtual path in its real reading as well when that one reaches a file outside the root."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepagents", reason="deepagents is not installed ('signoff[deepagents]')")

from deepagents import create_deep_agent
from deepagents.backends import CompositeBackend, FilesystemBackend, LocalShellBackend, StateBackend
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from lc_helpers import ScriptedModel, calls

import signoff.adapters.deepagents as deepagents_adapter
import signoff.policy.scope as scope_module
from signoff import Decision, Gate, Policy, SqliteStore
from signoff.adapters.deepagents import check_backend, gate_subagents
from signoff.adapters.langchain import SignoffMiddleware, wait_and_resume
from signoff.errors import PolicyError
from signoff.identity import Identity
from signoff.model import RequestStatus
from signoff.policy.starter import starter_toml

USER = {"messages": [{"role": "user", "content": "do the work"}]}
INSIDE = "INSIDE-NOTES-3d9e"  # in <root>/notes.md: an allowed read returns it
SIBLING = "SIBLING-SECRET-7f3a"  # <tmp>/sibling/data.txt, beside the root
OUTSIDE = "OUTSIDE-SECRET-91c2"  # <tmp>/outside.txt, above the root
PASSWD = "root:x:0:0"  # /etc/passwd

BACKENDS: dict[str, Callable[[Path], Any]] = {
    "filesystem-real": lambda root: FilesystemBackend(root_dir=root, virtual_mode=False),
    "local-shell-real": lambda root: LocalShellBackend(root_dir=root, virtual_mode=False),
    "filesystem-virtual": lambda root: FilesystemBackend(root_dir=root, virtual_mode=True),
    "local-shell-virtual": lambda root: LocalShellBackend(root_dir=root, virtual_mode=True),
}
REAL = sorted(k for k in BACKENDS if k.endswith("-real"))


@dataclass
class Env:
    tmp: Path
    root: Path
    store: SqliteStore
    gate: Gate
    ann: Identity
    models: list[ScriptedModel] = field(default_factory=list)

    def policy(self, *, outside: str = "approve", virtual: bool = True) -> Gate:
        text = starter_toml(str(self.root), "deepagents").replace(
            'outside = "approve"', f'outside = "{outside}"')
        if not virtual:
            text = text.replace("virtual = true", "virtual = false")
        self.gate = Gate(Policy.from_toml(text, source="deepagents.toml"), self.store,
                         agent="deep-agent")
        return self.gate

    def model(self, *responses: AIMessage) -> ScriptedModel:
        made = ScriptedModel(responses=list(responses))
        self.models.append(made)
        return made

    def outside_reads(self) -> list[tuple[str, dict[str, Any], str]]:
        reads = [("read_file", {"file_path": "/etc/passwd"}, "o-passwd"),
                 ("read_file", {"file_path": "etc/passwd"}, "o-passwd-relative"),
                 ("read_file", {"file_path": "/etc/hostname"}, "o-hostname"),
                 ("read_file", {"file_path": "../outside.txt"}, "o-above"),
                 ("read_file", {"file_path": str(self.tmp / "sibling" / "data.txt")},
                  "o-sibling")]
        # a container may have no /etc/hostname: nothing to read there then
        return [r for r in reads if r[1]["file_path"] != "/etc/hostname"
                or Path("/etc/hostname").exists()]

    def seen(self) -> str:
        """Everything any model was shown: what a tool returned reaches the model here."""
        return "\n".join(_text(m) for model in self.models for prompt in model.prompts
                         for m in prompt)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text(f"# notes\n{INSIDE}\n")
    (tmp_path / "sibling").mkdir()
    (tmp_path / "sibling" / "data.txt").write_text(f"{SIBLING}\n")
    (tmp_path / "outside.txt").write_text(f"{OUTSIDE}\n")
    store = SqliteStore(tmp_path / "signoff.db")
    gate = Gate(Policy.from_toml(starter_toml(str(root), "deepagents")), store, agent="deep")
    _, token = gate.add_user("ann")
    made = Env(tmp=tmp_path, root=root, store=store, gate=gate, ann=gate.authenticate(token))
    yield made
    store.close()


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else repr(message.content)


def _inside_path(env: Env, backend: Any) -> str:
    return "/notes.md" if backend.virtual_mode else str(env.root / "notes.md")


class Rejecter:
    """A human who rejects every request as it arrives (a subagent's asks wait in place)."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.stop = threading.Event()
        self.rejected: list[Any] = []
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self.stop.wait(0.02):
            for request in self.env.gate.store.list_requests(status=RequestStatus.PENDING):
                self.env.gate.decide(request.id, Decision.reject("not outside the workspace"),
                                     identity=self.env.ann)
                self.rejected.append(request)

    def __enter__(self) -> Rejecter:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def _run_to_the_end(env: Env, agent: Any, thread: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    out = agent.invoke(USER, config)
    while out is not None and "__interrupt__" in out:
        out = wait_and_resume(agent, env.gate, config, timeout=10)
    assert out is not None
    return dict(out)


def _build(env: Env, backend: Any, subagents: str, reads: list[Any]) -> Any:
    """The agent: the reads made by the main agent ("none"), or by a ``task`` subagent
    reviewed through ``gate_subagents`` — with the backend given to it ("checked") or not."""
    middleware = SignoffMiddleware(env.gate, subagent_wait=10)
    if subagents == "none":
        return create_deep_agent(model=env.model(calls(*reads), AIMessage(content="done")),
                                 backend=backend, middleware=[middleware],
                                 checkpointer=InMemorySaver())
    task = {"description": "read the files", "subagent_type": "general-purpose"}
    parent = env.model(calls(("task", task, "t1")), AIMessage(content="done"))
    child = env.model(calls(*reads), AIMessage(content="child done"))
    specs = gate_subagents(middleware, model=child,
                           **({"backend": backend} if subagents == "checked" else {}))
    return create_deep_agent(model=parent, backend=backend, middleware=[middleware],
                             subagents=specs, checkpointer=InMemorySaver())


def _answers(env: Env) -> dict[str, ToolMessage]:
    return {str(m.tool_call_id): m for model in env.models for prompt in model.prompts
            for m in prompt if isinstance(m, ToolMessage)}


def _assert_nothing_outside_was_read(env: Env) -> None:
    seen = env.seen()
    for secret in (PASSWD, SIBLING, OUTSIDE):
        assert secret not in seen
    for call_id, answer in _answers(env).items():
        if call_id.startswith("o-"):  # answered by signoff, not by the tool
            assert answer.status == "error"
            assert answer.artifact and "signoff" in answer.artifact, (call_id, answer)


@pytest.mark.parametrize("outside", ["approve", "deny"])
@pytest.mark.parametrize("subagents", ["none", "gated", "checked"])
@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_the_preset_never_returns_a_file_outside_the_root(env: Env, kind: str, subagents: str,
                                                          outside: str) -> None:
    env.policy(outside=outside)
    backend = BACKENDS[kind](env.root)
    reads = [*env.outside_reads(), ("read_file", {"file_path": _inside_path(env, backend)}, "i1")]
    if not backend.virtual_mode:
        # The preset reads /etc/passwd as <root>/etc/passwd; this backend reads the real
        # one. Refused when the agent is built (gate_subagents with the backend) or at its
        # first model call: before any tool runs, whatever the application called.
        with pytest.raises(PolicyError) as caught:
            agent = _build(env, backend, subagents, reads)
            _run_to_the_end(env, agent, f"{kind}-{subagents}-{outside}")
        assert caught.value.code == "backend_mismatch"
        assert "[tools.read_file] virtual = true" in caught.value.message
        assert all(model.prompts == [] for model in env.models)  # no model turn, no tool
        assert env.gate.store.list_requests() == []
        return
    with Rejecter(env) as human:
        agent = _build(env, backend, subagents, reads)
        out = _run_to_the_end(env, agent, f"{kind}-{subagents}-{outside}")
    assert out["messages"][-1].content == "done"
    _assert_nothing_outside_was_read(env)
    answers = _answers(env)
    assert answers["i1"].status == "success" and INSIDE in _text(answers["i1"])
    outside_ids = {call_id for _, _, call_id in env.outside_reads()}
    if outside == "deny":
        for call_id in outside_ids:
            assert answers[call_id].artifact["signoff"]["code"] == "outside_workspace"
        assert env.gate.store.list_requests() == []
    else:  # each outside read was put to a human, who said no; the in-root read was not
        asked = {r.call_id for r in human.rejected}
        assert asked == outside_ids
        for call_id in outside_ids:  # told of the rejection (on a resume, as remembered)
            told = answers[call_id].artifact["signoff"]
            assert told.get("outcome") == "rejected" or told["code"] == "rejected_before"


@pytest.mark.parametrize("subagents", ["none", "gated"])
@pytest.mark.parametrize("kind", REAL)
def test_the_judgement_alone_keeps_the_files_out(env: Env, kind: str, subagents: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With the backend check switched off, the policy alone: a virtual path is judged
    in its real reading too when that one reaches a file outside the root."""
    monkeypatch.setattr(deepagents_adapter, "check_backend", lambda policy, backend: None)
    env.policy(outside="deny")
    backend = BACKENDS[kind](env.root)
    reads = [*env.outside_reads(), ("read_file", {"file_path": str(env.root / "notes.md")}, "i1")]
    out = _run_to_the_end(env, _build(env, backend, subagents, reads), f"alone-{kind}")
    assert out["messages"][-1].content == "done"
    _assert_nothing_outside_was_read(env)
    answers = _answers(env)
    assert {call_id for call_id in answers if call_id.startswith("o-")} == {
        call_id for _, _, call_id in env.outside_reads()}
    # an in-root path as this backend reads it: inside in both readings, read
    assert answers["i1"].status == "success" and INSIDE in _text(answers["i1"])


@pytest.mark.parametrize("subagents", ["none", "gated"])
@pytest.mark.parametrize("kind", REAL)
def test_the_backend_check_alone_refuses_the_agent(env: Env, kind: str, subagents: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With the real reading switched off, the middleware alone: the agent's backend is
    found on its file tools and refused before the model's first turn."""
    monkeypatch.setattr(scope_module, "_real_reading", lambda *a, **k: None)
    env.policy(outside="deny")
    agent = _build(env, BACKENDS[kind](env.root), subagents, env.outside_reads())
    with pytest.raises(PolicyError) as caught:
        agent.invoke(USER, {"configurable": {"thread_id": f"check-{kind}"}})
    assert caught.value.code == "backend_mismatch"
    assert all(model.prompts == [] for model in env.models)


@pytest.mark.parametrize("kind", REAL)
def test_the_async_face_is_refused_too(env: Env, kind: str) -> None:
    agent = _build(env, BACKENDS[kind](env.root), "none", env.outside_reads())
    with pytest.raises(PolicyError) as caught:
        asyncio.run(agent.ainvoke(USER, {"configurable": {"thread_id": "async"}}))
    assert caught.value.code == "backend_mismatch"
    assert env.models[0].prompts == []


def test_a_subagent_built_over_a_real_path_backend_fails_closed(env: Env) -> None:
    """The main agent matches the policy; a compiled subagent the application built over a
    real-path backend (its own SignoffMiddleware, named as reviewed) is refused at its
    first model call: its reads never run."""
    child_model = env.model(calls(*env.outside_reads()), AIMessage(content="child done"))
    child = create_deep_agent(model=child_model, backend=FilesystemBackend(
        root_dir=env.root, virtual_mode=False), middleware=[SignoffMiddleware(env.gate)])
    parent = env.model(
        calls(("task", {"description": "read", "subagent_type": "reader"}, "t1")),
        AIMessage(content="done"))
    agent = create_deep_agent(
        model=parent, backend=FilesystemBackend(root_dir=env.root, virtual_mode=True),
        middleware=[SignoffMiddleware(env.gate, gated_subagents=["reader"])],
        subagents=[{"name": "reader", "description": "reads", "runnable": child}],
        checkpointer=InMemorySaver())
    with pytest.raises(PolicyError) as caught:
        agent.invoke(USER, {"configurable": {"thread_id": "compiled"}})
    assert caught.value.code == "backend_mismatch"
    assert len(parent.prompts) == 1 and child_model.prompts == []
    _assert_nothing_outside_was_read(env)


def test_a_resume_on_an_agent_rebuilt_over_another_backend_runs_nothing(env: Env) -> None:
    """The tool hook checks too: a paused call resumed on an agent rebuilt with a real-path
    backend (a resume goes to the tools without a model turn) does not run."""
    checkpointer = InMemorySaver()
    config = {"configurable": {"thread_id": "rebuilt"}}

    def build(backend: Any) -> Any:
        model = env.model(calls(("execute", {"command": "echo ran >> ledger.txt"}, "x1")),
                          AIMessage(content="done"))
        return create_deep_agent(model=model, backend=backend,
                                 middleware=[SignoffMiddleware(env.gate)],
                                 checkpointer=checkpointer)

    out = build(LocalShellBackend(root_dir=env.root)).invoke(USER, config)
    assert "__interrupt__" in out
    (request,) = env.gate.store.list_requests()
    env.gate.decide(request.id, Decision.approve(), identity=env.ann)
    rebuilt = build(LocalShellBackend(root_dir=env.root, virtual_mode=False))
    with pytest.raises(PolicyError) as caught:
        wait_and_resume(rebuilt, env.gate, config, timeout=10)
    assert caught.value.code == "backend_mismatch"
    assert not (env.root / "ledger.txt").exists()
    assert env.gate.get_request(request.id).status is RequestStatus.APPROVED  # never claimed


@pytest.mark.parametrize("kind", REAL)
def test_a_real_policy_refuses_relative_paths_over_a_real_backend(env: Env, kind: str) -> None:
    """``virtual = false`` over ``virtual_mode=False`` matches, but deepagents reads a
    relative path from the filesystem's root ("etc/passwd" is "/etc/passwd") while a real
    policy judges it under the workspace root: such a call is refused with the full path
    to use; absolute paths are judged as they are."""
    env.policy(outside="deny", virtual=False)
    backend = BACKENDS[kind](env.root)
    reads = [("read_file", {"file_path": "etc/passwd"}, "o-relative"),
             ("read_file", {"file_path": "notes.md"}, "o-relative-inside"),
             ("read_file", {"file_path": "/etc/passwd"}, "o-passwd"),
             ("read_file", {"file_path": str(env.tmp / "sibling" / "data.txt")}, "o-sibling"),
             ("glob", {"pattern": "*.md", "path": str(env.root)}, "g1"),
             ("read_file", {"file_path": str(env.root / "notes.md")}, "i1")]
    out = _run_to_the_end(env, _build(env, backend, "none", reads), f"real-{kind}")
    assert out["messages"][-1].content == "done"
    _assert_nothing_outside_was_read(env)
    answers = _answers(env)
    for call_id in ("o-relative", "o-relative-inside"):
        assert answers[call_id].artifact["signoff"]["code"] == "relative_path"
    assert str(env.root / "notes.md") in _text(answers["o-relative-inside"])  # what to use
    assert answers["o-passwd"].artifact["signoff"]["code"] == "outside_workspace"
    assert answers["g1"].status == "success" and "notes.md" in _text(answers["g1"])
    assert answers["i1"].status == "success" and INSIDE in _text(answers["i1"])


def test_a_composite_backend_is_checked_through_its_default_and_routes(env: Env) -> None:
    preset = env.policy().policy
    real_default = CompositeBackend(
        default=LocalShellBackend(root_dir=env.root, virtual_mode=False),
        routes={"/memories/": StateBackend()})
    with pytest.raises(PolicyError) as caught:
        check_backend(preset, real_default)
    assert "its default LocalShellBackend (virtual_mode=False)" in caught.value.message
    (env.root / "memories").mkdir()
    matching = CompositeBackend(
        default=LocalShellBackend(root_dir=env.root, virtual_mode=True),
        routes={"/memories/": FilesystemBackend(root_dir=env.root / "memories",
                                                virtual_mode=True),
                "/state/": StateBackend()})
    check_backend(preset, matching)  # no error
    for route in (FilesystemBackend(root_dir=env.root / "memories", virtual_mode=False),
                  FilesystemBackend(root_dir=env.tmp / "sibling", virtual_mode=True)):
        with pytest.raises(PolicyError) as caught:
            check_backend(preset, CompositeBackend(
                default=LocalShellBackend(root_dir=env.root, virtual_mode=True),
                routes={"/memories/": route}))
        assert "the route '/memories/'" in caught.value.message
    # and in a run: refused at the first model call
    model = env.model(calls(*env.outside_reads()), AIMessage(content="done"))
    agent = create_deep_agent(model=model, backend=real_default,
                              middleware=[SignoffMiddleware(env.gate)],
                              checkpointer=InMemorySaver())
    with pytest.raises(PolicyError):
        agent.invoke(USER, {"configurable": {"thread_id": "composite"}})
    assert model.prompts == []


def test_the_backend_is_found_on_each_of_deepagents_tools(env: Env) -> None:
    """The middleware finds a backend on each file tool deepagents builds (a deepagents
    release that builds them otherwise must fail here, not pass silently)."""
    from deepagents.middleware.filesystem import FilesystemMiddleware

    backend = LocalShellBackend(root_dir=env.root)
    tools = FilesystemMiddleware(backend=backend).tools
    assert {t.name for t in tools} >= {"ls", "read_file", "write_file", "edit_file", "delete",
                                       "glob", "grep", "execute"}
    assert all(deepagents_adapter.backend_of(t) is backend for t in tools)
    assert deepagents_adapter.backend_of(calls) is None  # not a tool at all
