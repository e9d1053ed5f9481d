"""A Pydantic AI agent whose tool calls go through signoff.

Run it:  .venv/bin/python examples/pydantic_ai_agent.py

The model is scripted (``FunctionModel``: no API key, deterministic). In one turn it reads
a file, removes another and asks to deploy and to pay an invoice. The policy allows the
read (it runs), denies the removal (the model is told why) and gates the deploy and the
payment: the run ends with Pydantic AI's ``DeferredToolRequests``, naming both signoff
requests. The application stores the paused run (message history + requests) as JSON
and the process "ends". A reviewer approves the payment and edits the deploy — as a
person would in the inbox or with ``signoff requests approve`` / ``edit``. A new gate and
new agent objects load the stored run and resume it: the edited deploy and the payment
run, once; resuming the same stored run again runs nothing twice.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

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

from signoff import Decision, Gate, Policy, SqliteStore
from signoff.adapters.pydantic_ai import Paused, Signoff, request_ids

POLICY = """
[policy]
gated = ["deploy", "pay"]

[tools.read_file]
[tools.remove]
[tools.deploy]
risk = "high"
[tools.pay]
risk = "high"

[[rules]]
id = "no-remove"
effect = "deny"
tool = "remove"
"""


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """First turn: four calls at once; once their answers are back, a summary."""
    last = messages[-1]
    answers = [p for p in last.parts if isinstance(p, ToolReturnPart)] \
        if isinstance(last, ModelRequest) else []
    for part in answers:
        print(f"  model reads {part.tool_name}: {part.content!r}")
    if answers:
        return ModelResponse(parts=[TextPart("Deployed and paid.")])
    return ModelResponse(parts=[
        ToolCallPart("read_file", {"path": "README.md"}, tool_call_id="call_1"),
        ToolCallPart("remove", {"path": "old.log"}, tool_call_id="call_2"),
        ToolCallPart("deploy", {"env": "prod"}, tool_call_id="call_3"),
        ToolCallPart("pay", {"invoice": "INV-7", "amount": 120}, tool_call_id="call_4")])


def build_agent(gate: Gate, ran: list[str]) -> Agent[None, str | DeferredToolRequests]:
    """The application's agent; signoff is the one ``capabilities=`` line."""
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(scripted), output_type=[str, DeferredToolRequests],
        capabilities=[Signoff(gate)])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(f"read_file {path}")
        return "# example"

    @agent.tool_plain
    def remove(path: str) -> str:
        """Remove a file."""
        ran.append(f"remove {path}")
        return "removed"

    @agent.tool_plain
    def deploy(env: str) -> str:
        """Deploy to an environment."""
        ran.append(f"deploy {env}")
        return f"deployed to {env}"

    @agent.tool_plain
    def pay(invoice: str, amount: int) -> str:
        """Pay an invoice."""
        ran.append(f"pay {invoice} {amount}")
        return f"paid {invoice}"

    return agent


def open_gate(work: Path) -> Gate:
    return Gate(Policy.from_toml(POLICY, source="example.toml"),
                SqliteStore(work / "signoff.db"), agent="example-agent")


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="signoff-pydantic-ai-"))
    ran: list[str] = []

    # The first process: the run pauses; the application stores it.
    gate = open_gate(work)
    _, token = gate.add_user("reviewer")
    result = build_agent(gate, ran).run_sync("ship the release and pay the invoice")
    paused = Paused.of(result)
    (work / "paused.json").write_text(paused.dumps())
    ids = request_ids(paused.requests)
    print(f"paused once, waiting on {len(ids)} request(s); ran so far: {ran}")
    for call_id, request_id in ids.items():
        print(f"  {call_id}  {request_id}  {gate.get_request(request_id).summary}")
    gate.store.close()

    # A reviewer decides (the inbox, the API or the CLI do the same).
    gate = open_gate(work)
    reviewer = gate.authenticate(token)
    gate.decide(ids["call_3"], Decision.edit({"env": "staging"}, reason="staging first"),
                identity=reviewer)
    gate.decide(ids["call_4"], Decision.approve(), identity=reviewer)
    gate.store.close()

    # A new process: a new gate, new agent objects, the stored run resumed.
    gate = open_gate(work)
    stored = Paused.loads((work / "paused.json").read_text())
    print("resumed:")
    done = build_agent(gate, ran).run_sync(**stored.resume_kwargs())
    print(f"model: {done.output}")
    print("resumed again from the same stored run (a replay):")
    build_agent(gate, ran).run_sync(**Paused.loads((work / "paused.json").read_text())
                                    .resume_kwargs())
    print(f"ran: {ran}")
    verified = gate.store.verify_audit()
    print(f"audit verified: {verified.ok} ({verified.count} events)")
    gate.store.close()
    return 0 if verified.ok and ran.count("deploy staging") == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
