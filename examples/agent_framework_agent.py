"""A Microsoft Agent Framework agent whose function calls go through signoff.

Run it:  .venv/bin/python examples/agent_framework_agent.py

The chat client is scripted (no API key, deterministic; the framework's own
``BaseChatClient`` with its function-invocation layer). In one turn the model reads a
balance and wants two payments. The read is allowed and runs at once; the payments need a
human, so the run pauses once with both as the framework's approval requests, each
carrying signoff's request id. The application stores the session (``session.to_dict()``)
and ends. A reviewer approves one payment and rejects the other, as a person would in the
inbox (``signoff serve``) or with ``signoff requests approve``. Then a "new process" — a
new gate over the same database, a new agent, the session read back — resumes: the
approved payment runs once, the model is told of the rejection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("ENABLE_INSTRUMENTATION", "false")  # no OpenTelemetry
logging.basicConfig(level=logging.ERROR)  # the framework's warnings stay out of the output

from agent_framework import (  # noqa: E402 (after the telemetry switch)
    Agent,
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    FunctionTool,
    Message,
    tool,
)

from signoff import Decision, Gate, Policy, SqliteStore  # noqa: E402
from signoff.adapters.agent_framework import (  # noqa: E402
    SignoffMiddleware,
    request_ids,
    wake_up,
)

POLICY = """
[policy]
version = "example-1"
gated = ["pay"]

[tools.pay]
risk = "high"
[tools.balance]
"""


class ScriptedClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any],
                     BaseChatClient[Any]):
    """Answers each model turn with the next scripted contents; a stand-in for a real
    chat client (OpenAIChatClient, …), which has the same layers."""

    def __init__(self, turns: Sequence[Sequence[Content]]) -> None:
        super().__init__()
        self.turns = [list(t) for t in turns]

    async def _respond(self) -> ChatResponse[Any]:
        return ChatResponse(messages=[Message(role="assistant", contents=self.turns.pop(0))])

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool,
                            options: Any, **kwargs: Any) -> Any:
        return self._respond()


def tools(ledger: Path) -> list[FunctionTool]:
    @tool
    def balance(account: str) -> str:
        """Read an account's balance."""
        return f"{account}: 1200 EUR"

    @tool
    def pay(to: str, amount: int) -> str:
        """Pay someone (here: a line in a ledger file)."""
        with ledger.open("a") as out:
            out.write(f"{to} {amount}\n")
        return f"paid {amount} EUR to {to}"

    return [balance, pay]


def fn(call_id: str, name: str, **args: Any) -> Content:
    return Content.from_function_call(call_id=call_id, name=name, arguments=json.dumps(args))


async def first_process(work: Path) -> tuple[str, list[dict[str, Any]], list[str]]:
    gate = Gate(Policy.from_toml(POLICY, source="example.toml"), SqliteStore(work / "s.db"))
    client = ScriptedClient([[fn("c1", "balance", account="ops"),
                              fn("c2", "pay", to="acme", amount=300),
                              fn("c3", "pay", to="globex", amount=900)]])
    agent = Agent(client=client, tools=tools(work / "ledger.txt"),
                  middleware=[SignoffMiddleware(gate, principal="ops@example.com")])
    session = agent.create_session()
    paused = await agent.run("pay this month's invoices", session=session)
    ids = request_ids(paused)
    print(f"paused once, waiting on {len(ids)} request(s):")
    for request_id in ids:
        print(f"  {request_id}  {gate.get_request(request_id).summary}")
    kept = json.dumps(session.to_dict())  # what the application stores
    asked = [c.to_dict() for c in paused.user_input_requests]
    gate.store.close()
    return kept, asked, ids


def reviewer(work: Path, ids: list[str]) -> None:
    gate = Gate(Policy.from_toml(POLICY, source="example.toml"), SqliteStore(work / "s.db"))
    _, token = gate.add_user("reviewer")
    who = gate.authenticate(token)
    for request_id in ids:
        if "globex" in gate.get_request(request_id).args:
            gate.decide(request_id, Decision.reject("not approved this quarter",
                                                    alternatives=["ask finance"]), identity=who)
        else:
            gate.decide(request_id, Decision.approve(), identity=who)
    gate.store.close()


async def second_process(work: Path, kept: str, asked: list[dict[str, Any]]) -> bool:
    gate = Gate(Policy.from_toml(POLICY, source="example.toml"), SqliteStore(work / "s.db"))
    client = ScriptedClient([[Content.from_text("Paid acme; globex needs finance.")],
                             [Content.from_text("Nothing more to do.")]])
    agent = Agent(client=client, tools=tools(work / "ledger.txt"),
                  middleware=[SignoffMiddleware(gate)])
    session = AgentSession.from_dict(json.loads(kept))
    requests = [Content.from_dict(a) for a in asked]
    done = await agent.run(wake_up(requests), session=session)
    for message in done.messages:
        for content in message.contents:
            if content.type == "function_result":
                print(f"tool {content.call_id}: {content.result!r}")
    print(f"model: {done.text}")
    # The same wake-up again: the framework has no such request pending any more (it
    # says so in its log), and the gate would refuse a second claim: nothing runs twice.
    await agent.run(wake_up(requests), session=session)
    print(f"ledger: {(work / 'ledger.txt').read_text().splitlines()}")
    verified = gate.store.verify_audit()
    print(f"audit verified: {verified.ok} ({verified.count} events)")
    gate.store.close()
    return verified.ok


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="signoff-maf-example-"))
    kept, asked, ids = asyncio.run(first_process(work))
    reviewer(work, ids)
    return 0 if asyncio.run(second_process(work, kept, asked)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
