"""A real ``create_agent`` with a scripted chat model, a real SQLite checkpointer and a
gate; tools append to a ledger file, the oracle for "ran exactly once"."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from signoff import Gate, Policy, SqliteStore
from signoff.adapters.langchain import SignoffContext, SignoffMiddleware
from signoff.identity import Identity

POLICY = """
[policy]
version = "lc-1"
gated = ["execute", "deploy"]
clarification_tool = "ask_user"

[workspace]
name = "ws"
root = "{root}"

[tools.execute]
shell = "command"
risk = "low"
[tools.read_file]
paths = ["path"]
[tools.deploy]
risk = "high"
[tools.ask_user]

[tools.delegate]

[[rules]]
id = "subagents"
effect = "allow"
tool = "delegate"

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"
"""


class ScriptedModel(FakeMessagesListChatModel):
    """Emits the given AIMessages in order; records the tools it was offered each turn."""

    offered: list[list[str]] = field(default_factory=list)  # type: ignore[assignment]
    prompts: list[list[BaseMessage]] = field(default_factory=list)  # type: ignore[assignment]

    def bind_tools(self, tools: Sequence[Any], **_: Any) -> Any:  # type: ignore[override]
        self.offered.append([getattr(t, "name", None) or t.get("name") for t in tools])
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def calls(*items: tuple[str, dict[str, Any], str | None]) -> AIMessage:
    return AIMessage(content="", tool_calls=[
        {"name": name, "args": args, "id": call_id, "type": "tool_call"}
        for name, args, call_id in items])


@dataclass
class Harness:
    gate: Gate
    ledger: Path
    alice: Identity
    tmp: Path
    agents: list[Any] = field(default_factory=list)
    remote: bool = False  # the middleware's gate is a Client of a real server (lc_remote)

    def ran(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    def tools(self) -> list[BaseTool]:
        ledger = self.ledger

        def note(text: str) -> None:
            with ledger.open("a") as fh:
                fh.write(text + "\n")

        @tool
        def execute(command: str) -> str:
            """Run a shell command."""
            note(f"execute {command}")
            return f"ran {command}"

        @tool
        def read_file(path: str) -> str:
            """Read a file."""
            note(f"read_file {path}")
            return f"contents of {path}"

        @tool
        def deploy(env: str) -> str:
            """Deploy."""
            note(f"deploy {env}")
            return f"deployed {env}"

        @tool
        def ask_user(question: str) -> str:
            """Ask the user a question."""
            note(f"ask_user {question}")
            return "the user says: main"

        return [execute, read_file, deploy, ask_user]

    def agent(self, responses: list[BaseMessage], *, middleware: SignoffMiddleware | None = None,
              extra_tools: Sequence[BaseTool] = (),
              in_memory: bool = False) -> tuple[Any, ScriptedModel]:
        """``in_memory``: LangGraph's InMemorySaver (SqliteSaver has no async face)."""
        model = ScriptedModel(responses=responses)
        checkpointer: Any
        if in_memory:
            checkpointer = InMemorySaver()
        else:
            conn = sqlite3.connect(self.tmp / "checkpoints.db", check_same_thread=False)
            self.agents.append(conn)
            checkpointer = SqliteSaver(conn)
        agent = create_agent(model, tools=[*self.tools(), *extra_tools],
                             middleware=[middleware or SignoffMiddleware(self.gate)],
                             checkpointer=checkpointer, context_schema=SignoffContext)
        return agent, model


def harness(tmp_path: Path, *, extra: str = "", reviewer: Any = None,
            remote: bool = False) -> Harness:
    """``extra``: lines added to the ``[policy]`` table; ``reviewer``: the auto reviewer;
    ``remote``: the middleware's gate is a ``Client`` of a real ``signoff serve``
    (``lc_remote``)."""
    root = tmp_path / "ws"
    root.mkdir()
    text = POLICY.format(root=root).replace('version = "lc-1"\n', f'version = "lc-1"\n{extra}\n')
    policy = Policy.from_toml(text, source="lc.toml", reviewer=reviewer)
    if remote:
        from lc_remote import RemoteGate  # only the remote variant needs it

        client = RemoteGate(text, policy, tmp_path)
        return Harness(gate=client, ledger=tmp_path / "ledger.txt",  # type: ignore[arg-type]
                       alice=client.alice, tmp=tmp_path, remote=True)
    gate = Gate(policy, SqliteStore(tmp_path / "signoff.db"), agent="agent-bot")
    _, token = gate.add_user("alice")
    return Harness(gate=gate, ledger=tmp_path / "ledger.txt",
                   alice=gate.authenticate(token), tmp=tmp_path)

