"""A real ADK ``Runner`` over a ``SqliteSessionService``, a scripted ``BaseLlm`` and an
in-process gate on SQLite; the tools append to a ledger file, the oracle for "ran exactly
once". Each ``Harness.runner()`` builds new agent, model, plugin and session-service
objects over the same files: what a new process would build."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ["OTEL_SDK_DISABLED"] = "true"  # no telemetry export, ever

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.events.event import Event
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types
from pydantic import Field

from signoff import Gate, Policy, SqliteStore
from signoff.adapters.google_adk import SignoffPlugin
from signoff.identity import Identity

POLICY = """
[policy]
version = "adk-1"
gated = ["transfer", "deploy"]

[tools.transfer]
risk = "high"
[tools.deploy]
risk = "high"
[tools.lookup]
[tools.wipe]
[tools.transfer_to_agent]
[tools.release]
[tools.helper]

[[rules]]
id = "two-for-release"
effect = "ask"
tool = "release"
roles = ["release-manager"]
approvals = 2

[[rules]]
id = "reads"
effect = "allow"
tool = "lookup"

[[rules]]
id = "handoffs"
effect = "allow"
tool = "transfer_to_agent"

[[rules]]
id = "helpers"
effect = "allow"
tool = "helper"

[[rules]]
id = "no-wipe"
effect = "deny"
tool = "wipe"
"""

APP = "adk-test"
USER = "u1"
SESSION = "s-1"


class ScriptedLlm(BaseLlm):
    """Emits the given contents in order, one per model call; records what it was shown."""

    model: str = "scripted"
    turns: list[types.Content] = Field(default_factory=list)
    seen: list[list[types.Content]] = Field(default_factory=list)

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append(list(llm_request.contents))
        content = self.turns.pop(0) if self.turns else text("(no more turns)")
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2)
        yield LlmResponse(content=content, usage_metadata=usage)


def calls(*items: tuple[str, dict[str, Any], str | None]) -> types.Content:
    """A model turn making these function calls (name, args, id)."""
    return types.Content(role="model", parts=[
        types.Part(function_call=types.FunctionCall(name=name, args=args, id=call_id))
        for name, args, call_id in items])


def text(words: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=words)])


def user(words: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=words)])


def responses(model: ScriptedLlm, turn: int = -1) -> dict[str, dict[str, Any]]:
    """The function responses the model was shown on its ``turn``-th call, by call id."""
    found: dict[str, dict[str, Any]] = {}
    for content in model.seen[turn]:
        for part in content.parts or []:
            if part.function_response is not None:
                found[str(part.function_response.id or part.function_response.name)] = \
                    dict(part.function_response.response or {})
    return found


@dataclass
class Harness:
    gate: Gate
    ledger: Path
    alice: Identity
    tmp: Path
    sessions_db: Path
    services: list[SqliteSessionService] = field(default_factory=list)

    def ran(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    def tools(self) -> list[Callable[..., Any]]:
        ledger = self.ledger

        def note(line: str) -> None:
            with ledger.open("a") as fh:
                fh.write(line + "\n")

        def transfer(to: str, amount: int) -> dict[str, Any]:
            """Send money."""
            note(f"transfer {to} {amount}")
            return {"sent": amount, "to": to}

        def deploy(env: str) -> str:
            """Deploy."""
            note(f"deploy {env}")
            if env == "broken":
                raise RuntimeError("the deploy broke")
            return f"deployed {env}"

        def release(version: str) -> str:
            """Release a version."""
            note(f"release {version}")
            return f"released {version}"

        def lookup(key: str) -> str:
            """Look a key up."""
            note(f"lookup {key}")
            return f"value of {key}"

        def wipe(target: str) -> str:
            """Wipe a target."""
            note(f"wipe {target}")
            return "wiped"

        return [transfer, deploy, lookup, wipe, release]

    def runner(self, turns: list[types.Content], *, gate: Any = None,
               plugin_type: type[SignoffPlugin] = SignoffPlugin,
               **plugin: Any) -> tuple[Runner, ScriptedLlm]:
        """New objects over the same files: model, agent, plugin, session service, runner."""
        model = ScriptedLlm(turns=list(turns))
        agent = LlmAgent(name="assistant", model=model, instruction="Help.", tools=self.tools())
        service = SqliteSessionService(str(self.sessions_db))
        self.services.append(service)
        app = App(name=APP, root_agent=agent,
                  plugins=[plugin_type(gate or self.gate, **plugin)])
        return Runner(app=app, session_service=service), model


def run(runner: Runner, message: types.Content, *, session: str = SESSION,
        create: bool = False) -> list[Event]:
    """One ``run_async`` to its end: the events it yielded."""
    async def go() -> list[Event]:
        if create:
            await runner.session_service.create_session(app_name=APP, user_id=USER,
                                                        session_id=session)
        return [e async for e in runner.run_async(user_id=USER, session_id=session,
                                                  new_message=message)]
    return asyncio.run(go())


def stored_session(runner: Runner, session: str = SESSION) -> Any:
    async def go() -> Any:
        return await runner.session_service.get_session(app_name=APP, user_id=USER,
                                                        session_id=session)
    return asyncio.run(go())


def harness(tmp_path: Path) -> Harness:
    policy = Policy.from_toml(POLICY, source="adk.toml")
    gate = Gate(policy, SqliteStore(tmp_path / "signoff.db"), agent="agent-bot")
    _, token = gate.add_user("alice", roles=["release-manager"])
    return Harness(gate=gate, ledger=tmp_path / "ledger.txt", alice=gate.authenticate(token),
                   tmp=tmp_path, sessions_db=tmp_path / "sessions.db")
