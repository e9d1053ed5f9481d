"""An OpenAI Agents SDK agent whose tool calls go through signoff.

Run it:  .venv/bin/python examples/openai_agents_agent.py

The model is the SDK's own ScriptedModel (no API key, deterministic, nothing leaves the
machine): it reads a file, then wants to run two shell commands in one turn. The read is
allowed by the policy and runs at once; the two commands need a human, so the run pauses
with the SDK's interruptions, one signoff request each, and the application stores the
run state as text. A stand-in approver approves one and edits the other, as a person
would in the inbox (`signoff serve`) or with `signoff requests approve`. Then, as a new
process would, new agent objects load the stored state, signoff's decisions are set on
it, and the run resumes: the edited command is what runs, each approved call once.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, Runner, RunState, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from signoff import Decision, Gate, Policy, SqliteStore
from signoff.adapters.openai_agents import apply_decisions, gate_agent, paused

set_tracing_disabled(True)

POLICY = """
[policy]
gated = ["execute"]

[workspace]
name = "example"
root = "{root}"

[tools.read_file]
paths = ["path"]
[tools.execute]
shell = "command"
"""


def build(work: Path, gate: Gate, turns: list[list[Any]]) -> Agent[Any]:
    """The application's agent, gated: ``gate_agent`` is the one line signoff adds."""

    @function_tool
    def read_file(path: str) -> str:
        """Read a file in the workspace."""
        return (work / "ws" / path).read_text()

    @function_tool
    def execute(command: str) -> str:
        """Run a shell command (here: only pretend)."""
        return f"ran: {command}"

    agent = Agent(name="builder", instructions="Build and deploy.",
                  model=ScriptedModel(turns), tools=[read_file, execute])
    return gate_agent(agent, gate, thread_id="example-thread")


async def run(work: Path, gate: Gate) -> str:
    agent = build(work, gate, [
        [function_call("read_file", {"path": "README.md"}, call_id="call_1")],
        [function_call("execute", {"command": "make test"}, call_id="call_2"),
         function_call("execute", {"command": "make deploy"}, call_id="call_3")],
    ])
    result = await Runner.run(agent, "Test and deploy the project.")
    waiting = await paused(result)
    print(f"paused, waiting on {len(waiting)} request(s):")
    for one in waiting:
        print(f"  {one.request_id}  {one.tool}  call {one.call_id}")
    return result.to_state().to_string()  # the application keeps this (a file, a row)


def reviewer_decides(gate: Gate, reviewer: Any) -> None:
    """What a person does in the inbox."""
    for request in gate.pending_on_thread("example-thread"):
        if "deploy" in request.args:
            gate.decide(request.id, Decision.edit({"command": "make deploy ENV=staging"},
                                                  reason="staging first"), identity=reviewer)
        else:
            gate.decide(request.id, Decision.approve(), identity=reviewer)


async def resume(work: Path, gate: Gate, stored: str) -> None:
    agent = build(work, gate, [[assistant_message("Tested, and deployed to staging.")]])
    state = await RunState.from_string(agent, stored)
    still = await apply_decisions(state)  # decisions are read from signoff's store
    assert not still, "every request was decided"
    result = await Runner.run(agent, state)
    for item in result.new_items:
        if item.type == "tool_call_output_item":
            print(f"tool output: {item.output!r}")
    print(f"model: {result.final_output}")


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="signoff-example-"))
    (work / "ws").mkdir()
    (work / "ws" / "README.md").write_text("# example\n")
    gate = Gate(Policy.from_toml(POLICY.format(root=work / "ws"), source="example.toml"),
                SqliteStore(work / "signoff.db"), agent="example-agent")
    _, token = gate.add_user("reviewer")
    reviewer = gate.authenticate(token)

    stored = asyncio.run(run(work, gate))
    reviewer_decides(gate, reviewer)
    asyncio.run(resume(work, gate, stored))
    verified = gate.store.verify_audit()
    print(f"audit verified: {verified.ok} ({verified.count} events)")
    gate.store.close()
    return 0 if verified.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
