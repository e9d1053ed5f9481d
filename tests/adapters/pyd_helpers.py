"""A real Pydantic AI ``Agent`` with a scripted ``FunctionModel``, the ``Signoff`` capability
and a gate on SQLite; tools append to a ledger file, the oracle for "ran exactly once"."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from signoff import Gate, Policy, SqliteStore
from signoff.adapters.pydantic_ai import Signoff
from signoff.identity import Identity

POLICY = """
[policy]
version = "pyd-1"
gated = ["deploy", "transfer"]

[tools.read_file]
[tools.deploy]
risk = "high"
[tools.transfer]
risk = "high"
[tools.rm]
[tools.delegate]
[tools.notify]

[[rules]]
id = "deploy-needs-ops"
effect = "ask"
tool = "deploy"
roles = ["ops"]

[[rules]]
id = "no-rm"
effect = "deny"
tool = "rm"

[[rules]]
id = "delegate-free"
effect = "allow"
tool = "delegate"
"""


def calls(*items: tuple[str, dict[str, Any], str]) -> ModelResponse:
    """One model turn making these tool calls (name, args, id)."""
    return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=call_id)
                                for name, args, call_id in items])


def text(content: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content)])


@dataclass
class Script:
    """A ``FunctionModel`` function: the given turns in order; what it was sent, kept."""

    turns: list[ModelResponse]
    seen: list[list[Any]] = field(default_factory=list)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        self.seen.append(list(last.parts) if isinstance(last, ModelRequest) else [])
        if not self.turns:
            return text("(script ended)")
        return self.turns.pop(0)

    def returns(self, turn: int = -1) -> dict[str, str]:
        """Tool call id → what the model read back, in the request of that turn."""
        return {p.tool_call_id: str(p.content) for p in self.seen[turn]
                if isinstance(p, ToolReturnPart)}

    def outcomes(self, turn: int = -1) -> dict[str, str]:
        return {p.tool_call_id: p.outcome for p in self.seen[turn]
                if isinstance(p, ToolReturnPart)}


@dataclass
class Harness:
    gate: Gate
    ledger: Path
    alice: Identity  # an approver with the ops role
    bob: Identity  # an approver without it
    tmp: Path
    policy_text: str = POLICY

    def ran(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    def agent(self, turns: Sequence[ModelResponse], *, capability: Signoff | None = None,
              gate: Any = None, extra_tools: Sequence[Any] = (),
              more: Sequence[Any] = ()) -> tuple[Agent[None, Any], Script]:
        """A new agent (new objects each time, as in a new process) with the ledger tools;
        ``more``: capabilities besides signoff's."""
        script = Script(list(turns))
        agent: Agent[None, Any] = Agent(
            FunctionModel(script), output_type=[str, DeferredToolRequests],
            capabilities=[capability or Signoff(gate or self.gate), *more],
            tools=list(extra_tools))
        ledger = self.ledger

        def note(line: str) -> None:
            with ledger.open("a") as fh:
                fh.write(line + "\n")

        @agent.tool_plain
        def read_file(path: str) -> str:
            """Read a file."""
            note(f"read_file {path}")
            return f"contents of {path}"

        @agent.tool_plain
        def deploy(env: str, version: str = "latest") -> str:
            """Deploy a version to an environment."""
            note(f"deploy {env} {version}")
            return f"deployed {version} to {env}"

        @agent.tool_plain
        def transfer(amount: int, to: str) -> str:
            """Move money."""
            note(f"transfer {amount} {to}")
            return f"sent {amount} to {to}"

        @agent.tool_plain
        def rm(path: str) -> str:
            """Remove a file."""
            note(f"rm {path}")
            return "removed"

        return agent, script


def harness(tmp_path: Path, template: Path | None = None) -> Harness:
    """A gate over a new database in ``tmp_path``; ``template``: a database made once
    (``harness_at``) copied in, instead of building the schema and users again."""
    if template is not None:
        for name in ("signoff.db", "alice.token", "bob.token"):
            shutil.copyfile(template / name, tmp_path / name)
    return harness_at(tmp_path)


def harness_at(directory: Path) -> Harness:
    """The harness over an existing directory (another process's database), its users made
    once and alice's token kept in ``alice.token``."""
    gate = Gate(Policy.from_toml(POLICY, source="pyd.toml"), SqliteStore(directory / "signoff.db"),
                agent="pyd-bot")
    saved = directory / "alice.token"
    if not saved.exists():
        _, alice = gate.add_user("alice", roles=["ops"])
        _, bob = gate.add_user("bob")
        saved.write_text(alice + "\n")
        (directory / "bob.token").write_text(bob + "\n")
    alice_id = gate.authenticate(saved.read_text().strip())
    bob_id = gate.authenticate((directory / "bob.token").read_text().strip())
    return Harness(gate=gate, ledger=directory / "ledger.txt", alice=alice_id, bob=bob_id,
                   tmp=directory)
