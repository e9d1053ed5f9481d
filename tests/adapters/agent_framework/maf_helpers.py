"""The Agent Framework tests' machinery: a scripted chat client (the framework's own
``BaseChatClient`` with its function-invocation and middleware layers, emitting given
function calls), tools that write a ledger, and a gate over SQLite."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("ENABLE_INSTRUMENTATION", "false")  # no OpenTelemetry spans

from agent_framework import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    FunctionTool,
    Message,
    tool,
)

from signoff import Gate, Policy, SqliteStore
from signoff.adapters.agent_framework import SignoffMiddleware
from signoff.decisions import Decision
from signoff.identity import Identity

POLICY = """
[policy]
version = "maf-1"
gated = ["pay", "refund"]

[tools.pay]
risk = "high"
[tools.refund]
risk = "low"
[tools.balance]
[tools.wipe]
[tools.delegate]

[[rules]]
id = "payments"
effect = "ask"
tool = "pay"
roles = ["finance"]

[[rules]]
id = "no-wipe"
effect = "deny"
tool = "wipe"
"""


def call(call_id: str, name: str, **args: Any) -> Content:
    return Content.from_function_call(call_id=call_id, name=name, arguments=json.dumps(args))


class ScriptedClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any],
                     BaseChatClient[Any]):
    """Answers each model turn with the next scripted contents (function calls or text);
    records the messages it was sent, the tools it was offered and its instructions.
    ``middleware``: the client's own (chat and function middleware only)."""

    def __init__(self, turns: Sequence[Sequence[Content | str]],
                 middleware: Sequence[Any] | None = None) -> None:
        super().__init__(middleware=middleware)
        self.turns = [list(t) for t in turns]
        self.prompts: list[list[Message]] = []
        self.offered: list[list[str]] = []
        self.instructions: list[Any] = []

    def _next(self, messages: Sequence[Message]) -> list[Content]:
        self.prompts.append(list(messages))
        turn = self.turns.pop(0) if self.turns else ["(no more turns)"]
        return [Content.from_text(t) if isinstance(t, str) else t for t in turn]

    async def _respond(self, messages: Sequence[Message]) -> ChatResponse[Any]:
        return ChatResponse(messages=[Message(role="assistant", contents=self._next(messages))])

    async def _updates(self, messages: Sequence[Message]) -> AsyncIterator[ChatResponseUpdate]:
        yield ChatResponseUpdate(role="assistant", contents=self._next(messages))

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool,
                            options: Any, **kwargs: Any) -> Any:
        self.offered.append([t.name for t in (options or {}).get("tools") or ()])
        self.instructions.append((options or {}).get("instructions"))
        if stream:  # an agent run as a tool (``as_tool``) streams
            return self._build_response_stream(self._updates(messages))
        return self._respond(messages)

    def results(self) -> dict[str, Any]:
        """call id → the function result the model was last sent for it."""
        found: dict[str, Any] = {}
        for prompt in self.prompts:
            for message in prompt:
                for content in message.contents:
                    if content.type == "function_result":
                        found[str(content.call_id)] = content.result
        return found


@dataclass
class Harness:
    gate: Gate
    ledger: Path
    alice: Identity  # an approver with the role payments need ("finance")
    tmp: Path
    token: str = ""  # alice's, for the command line

    def tools(self) -> list[FunctionTool]:
        ledger = self.ledger

        @tool
        def pay(to: str, amount: int) -> str:
            """Pay someone."""
            with ledger.open("a") as out:
                out.write(f"pay {to} {amount}\n")
            return f"paid {amount} to {to}"

        @tool
        def balance(account: str) -> str:
            """Read a balance."""
            with ledger.open("a") as out:
                out.write(f"balance {account}\n")
            return f"{account}: 100"

        @tool
        def wipe(account: str) -> str:
            """Wipe an account."""
            with ledger.open("a") as out:
                out.write(f"wipe {account}\n")
            return "wiped"

        @tool
        def refund(to: str, amount: int) -> str:
            """Refund someone."""
            with ledger.open("a") as out:
                out.write(f"refund {to} {amount}\n")
            return f"refunded {amount} to {to}"

        return [pay, balance, wipe, refund]

    def agent(self, client: ScriptedClient, **options: Any) -> Agent[Any]:
        return Agent(client=client, tools=self.tools(),
                     middleware=[SignoffMiddleware(self.gate, **options)])

    def lines(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    def decide(self, request_id: str, decision: Decision) -> None:
        self.gate.decide(request_id, decision, identity=self.alice)

    def reopen(self) -> Harness:
        """A new gate over the same SQLite file (as a new process would build it)."""
        self.gate.store.close()
        gate = Gate(Policy.from_toml(POLICY, source="maf.toml"),
                    SqliteStore(self.tmp / "signoff.db"))
        return Harness(gate=gate, ledger=self.ledger, alice=self.alice, tmp=self.tmp,
                       token=self.token)


def harness(tmp: Path) -> Harness:
    gate = Gate(Policy.from_toml(POLICY, source="maf.toml"), SqliteStore(tmp / "signoff.db"))
    _, token = gate.add_user("alice", roles=["finance"])
    return Harness(gate=gate, ledger=tmp / "ledger.txt", alice=gate.authenticate(token), tmp=tmp,
                   token=token)


def stored(session: AgentSession) -> str:
    """The session as an application keeps it between processes."""
    return json.dumps(session.to_dict())


def restored(text: str) -> AgentSession:
    return AgentSession.from_dict(json.loads(text))
