"""A Google ADK agent whose tool calls go through signoff.

Run it:  .venv/bin/python examples/google_adk_agent.py

The model is scripted (no API key, no network, deterministic): in one turn it looks a
balance up and sends money twice. The lookup is allowed by the policy and runs at once;
the two transfers need a human, so the run pauses on ADK's own tool confirmation, its
session stored in SQLite by ADK's ``SqliteSessionService``. Then, as if in a new process —
a new gate over the same signoff database, a new agent, a new runner — a person approves
one transfer and edits the other (here through ``Gate.decide``; in real life in the inbox
of ``signoff serve`` or with ``signoff requests approve``), and ``resume_message`` wakes
the run: the approved call runs, and the edited one runs with the edited arguments.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

os.environ["OTEL_SDK_DISABLED"] = "true"  # no telemetry export

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types
from pydantic import Field

from signoff import Decision, Gate, Policy, SqliteStore
from signoff.adapters.google_adk import SignoffPlugin, pauses, resume_message

POLICY = """
[policy]
gated = ["transfer"]

[tools.transfer]
risk = "high"
[tools.balance]

[[rules]]
id = "reads"
effect = "allow"
tool = "balance"
"""


class ScriptedLlm(BaseLlm):
    """Replays the given turns; a stand-in for a real model (subclass of ADK's BaseLlm)."""

    model: str = "scripted"
    turns: list[types.Content] = Field(default_factory=list)

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2)
        yield LlmResponse(content=self.turns.pop(0), usage_metadata=usage)


LEDGER: list[str] = []


def balance(account: str) -> dict[str, Any]:
    """The balance of an account."""
    LEDGER.append(f"balance {account}")
    return {"account": account, "balance": 120}


def transfer(to: str, amount: int) -> dict[str, Any]:
    """Send money."""
    LEDGER.append(f"transfer {amount} to {to}")
    return {"sent": amount, "to": to}


def runner(gate: Gate, sessions: Path, turns: list[types.Content]) -> Runner:
    agent = LlmAgent(name="treasurer", model=ScriptedLlm(turns=turns),
                     instruction="Pay what is asked.", tools=[balance, transfer])
    app = App(name="treasury", root_agent=agent, plugins=[SignoffPlugin(gate)])  # the line
    return Runner(app=app, session_service=SqliteSessionService(str(sessions)))


async def drive(run: Runner, message: types.Content) -> list[str]:
    said = []
    async for event in run.run_async(user_id="ann", session_id="s1", new_message=message):
        for part in (event.content.parts or []) if event.content else []:
            if part.text:
                said.append(part.text)
    return said


async def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="signoff-adk-example-"))
    policy = Policy.from_toml(POLICY, source="example.toml")
    db, sessions = work / "signoff.db", work / "sessions.db"

    gate = Gate(policy, SqliteStore(db), agent="treasury-bot")
    first = runner(gate, sessions, [types.Content(role="model", parts=[
        types.Part(function_call=types.FunctionCall(id=i, name=n, args=a)) for i, n, a in (
            ("c1", "balance", {"account": "ops"}),
            ("c2", "transfer", {"to": "bob", "amount": 50}),
            ("c3", "transfer", {"to": "eve", "amount": 500}))])])
    await first.session_service.create_session(app_name="treasury", user_id="ann",
                                               session_id="s1")
    await drive(first, types.Content(role="user", parts=[types.Part(text="pay bob and eve")]))
    session = await first.session_service.get_session(app_name="treasury", user_id="ann",
                                                      session_id="s1")
    assert session is not None
    waiting = [p.request_id for p in pauses(session.events)]
    print(f"paused on {len(waiting)} request(s); ran so far: {LEDGER}")
    gate.close()

    # A new process: a new gate over the same database, a new agent and runner.
    gate = Gate(policy, SqliteStore(db), agent="treasury-bot")
    _, token = gate.add_user("alice")
    alice = gate.authenticate(token)
    gate.decide(waiting[0], Decision.approve(), identity=alice)
    gate.decide(waiting[1], Decision.edit({"to": "eve", "amount": 50}, reason="cap at 50"),
                identity=alice)
    second = runner(gate, sessions, [types.Content(role="model", parts=[
        types.Part(text="Paid bob 50 and eve 50 (capped by the reviewer).")])])
    session = await second.session_service.get_session(app_name="treasury", user_id="ann",
                                                       session_id="s1")
    said = await drive(second, resume_message(session))
    print(f"the model said: {said[-1]}")
    print(f"ran: {sorted(LEDGER)}")  # ADK runs the calls of a turn concurrently
    verified = gate.store.verify_audit()
    print(f"audit verified: {verified.ok} ({verified.count} events)")
    gate.close()
    return 0 if sorted(LEDGER) == ["balance ops", "transfer 50 to bob",
                                   "transfer 50 to eve"] else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
