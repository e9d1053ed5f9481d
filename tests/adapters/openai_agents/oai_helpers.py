"""A real SDK ``Agent`` with the SDK's own ``ScriptedModel`` (``agents.testing``) and a gate
on SQLite; the tools append to a ledger file, the oracle for "ran exactly once"."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

import agents
from agents import Agent, FunctionTool, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from signoff import Gate, Policy, SqliteStore
from signoff.adapters.openai_agents import gate_agent
from signoff.identity import Identity

agents.set_tracing_disabled(True)

POLICY = """
[policy]
version = "oai-1"
gated = ["execute", "deploy"]

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
[tools.gh__list_issues]
risk = "low"

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "no-repo-delete"
effect = "deny"
tool = "gh__delete_repo"
reason = "repositories are never deleted by an agent"
"""

THREAD = "t-oai"
__all__ = ["THREAD", "Harness", "Runner", "assistant_message", "call", "done", "harness"]


def call(name: str, args: dict[str, Any] | str, call_id: str) -> Any:
    return function_call(name, args, call_id=call_id)


def done(text: str = "Done.") -> list[Any]:
    return [assistant_message(text)]


@dataclass
class Harness:
    gate: Gate
    ledger: Path
    alice: Identity
    tmp: Path
    policy_text: str
    alice_token: str = ""

    def ran(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    def tools(self) -> list[FunctionTool]:
        ledger = self.ledger

        def note(text: str) -> None:
            with ledger.open("a") as fh:
                fh.write(text + "\n")

        @function_tool
        def execute(command: str) -> str:
            """Run a shell command."""
            note(f"execute {command}")
            return f"ran {command}"

        @function_tool
        def read_file(path: str) -> str:
            """Read a file."""
            note(f"read_file {path}")
            return f"contents of {path}"

        @function_tool
        def deploy(env: str) -> str:
            """Deploy."""
            note(f"deploy {env}")
            return f"deployed {env}"

        return [execute, read_file, deploy]

    def agent(self, turns: Sequence[Sequence[Any]], *, gate: Any = None,
              thread_id: str | None = THREAD, **options: Any) -> tuple[Agent[Any], ScriptedModel]:
        """A fresh gated agent (new objects, as a new process would build them)."""
        model = ScriptedModel([list(t) for t in turns])
        plain = Agent(name="ops", instructions="Operate.", model=model, tools=self.tools())
        return gate_agent(plain, gate or self.gate, thread_id=thread_id, **options), model

    def reopen(self) -> Gate:
        """A new gate over the same SQLite file: what a restarted process builds."""
        self.gate.store.close()
        policy = Policy.from_toml(self.policy_text, source="oai.toml")
        self.gate = Gate(policy, SqliteStore(self.tmp / "signoff.db"), agent="agent-bot")
        return self.gate


_TEMPLATE: list[tuple[Path, str]] = []  # a migrated database holding alice, and her token


def _database(into: Path) -> str:
    """A fresh copy of the template database at ``into`` (migrating and adding a user for
    every test would cost more than the test); alice's token."""
    if not _TEMPLATE:
        made = Path(tempfile.mkdtemp(prefix="signoff-oai-template-"))
        atexit.register(shutil.rmtree, made, True)
        gate = Gate(Policy.from_toml(POLICY.format(root=made), source="oai.toml"),
                    SqliteStore(made / "signoff.db"), agent="agent-bot")
        _, token = gate.add_user("alice")
        gate.store.close()
        _TEMPLATE.append((made, token))
    made, token = _TEMPLATE[0]
    for file in made.glob("signoff.db*"):
        shutil.copy(file, into / file.name)
    return token


def harness(tmp_path: Path) -> Harness:
    root = tmp_path / "ws"
    root.mkdir()
    text = POLICY.format(root=root)
    policy = Policy.from_toml(text, source="oai.toml")
    token = _database(tmp_path)
    gate = Gate(policy, SqliteStore(tmp_path / "signoff.db"), agent="agent-bot")
    return Harness(gate=gate, ledger=tmp_path / "ledger.txt", alice=gate.authenticate(token),
                   tmp=tmp_path, policy_text=text, alice_token=token)


def outputs(result: Any) -> dict[str, str]:
    """call id → the tool output the model reads, from a run's new items."""
    found: dict[str, str] = {}
    for item in result.new_items:
        raw = item.raw_item
        if getattr(item, "type", None) == "tool_call_output_item":
            call_id = raw["call_id"] if isinstance(raw, dict) else raw.call_id
            found[call_id] = str(item.output)
    return found
