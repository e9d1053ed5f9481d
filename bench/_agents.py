"""The four agent frameworks ``frameworks_bench.py`` times, each built three ways over one
scripted model and one ``lookup`` tool: bare, with the framework's own approval hook
answering "no approval needed" for every call, and with signoff's adapter.

A run is a new conversation: ``turns`` model turns that each call ``lookup`` once, then a
final answer (``done``). The scripted models read the turn from the history they are sent,
so one model object serves every run and each variant gets the very same replies. Each
native hook counts the calls it was asked about, so the bench can check it ran on every
call rather than being skipped by the framework.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Run = Callable[[], Awaitable[None]]
QUERY = {"query": "weather"}
PROMPT = "look it up"


@dataclass
class Agents:
    """One framework's variants: ``runs[variant]`` is one timed run (``hooks``, where
    given: the hooks signoff uses, doing nothing — the framework's own charge for them)."""

    framework: str
    dist: str  # the distribution whose version the bench prints
    native: str  # what the native hook is, in words
    runs: dict[str, Run]
    asked: list[int] = field(default_factory=lambda: [0])  # native hook calls so far


def lookup(query: str) -> str:
    """Look something up."""
    return "found"


def expect_done(text: object, framework: str) -> None:
    if text != "done":
        raise SystemExit(f"benchmark setup is wrong: a {framework} run ended with {text!r}")


def openai_agents(turns: int, gate: Any) -> Agents:
    """``Runner.run`` with the SDK's ``ScriptedModel``; native: ``needs_approval`` as a
    callable answering ``False`` on the function tool."""
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    import agents
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from signoff.adapters.openai_agents import gate_agent

    agents.set_tracing_disabled(True)
    made = Agents("OpenAI Agents SDK", "openai-agents",
                  "needs_approval=<callable returning False> on the function tool", {})

    async def no_approval(_context: Any, _params: Any, _call_id: str) -> bool:
        made.asked[0] += 1
        return False

    def agent(tool: Any) -> Any:
        return Agent(name="bench", instructions="Help.", model=ScriptedModel(), tools=[tool])

    steps = [[function_call("lookup", QUERY, call_id=f"call_{i}")] for i in range(turns)]
    steps.append([assistant_message("done")])

    def runner(built: Any) -> Run:
        async def run() -> None:
            built.model = ScriptedModel(steps)
            result = await Runner.run(built, PROMPT, max_turns=turns + 1,
                                      context={"signoff_thread_id": uuid.uuid4().hex})
            expect_done(result.final_output, made.framework)
        return run

    made.runs = {
        "bare": runner(agent(function_tool(lookup))),
        "native": runner(agent(function_tool(lookup, needs_approval=no_approval))),
        "signoff": runner(gate_agent(agent(function_tool(lookup)), gate)),
    }
    return made


def pydantic_ai(turns: int, gate: Any) -> Agents:
    """``Agent.run`` with a ``FunctionModel``; native: the ``FunctionToolset`` wrapped in
    ``ApprovalRequiredToolset`` (``.approval_required(...)``) whose function answers
    ``False``."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.tools import DeferredToolRequests
    from pydantic_ai.toolsets import FunctionToolset

    from signoff.adapters.pydantic_ai import Signoff

    made = Agents("Pydantic AI", "pydantic-ai-slim",
                  "ApprovalRequiredToolset (toolset.approval_required) answering False", {})

    def script(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        done = sum(1 for m in messages if isinstance(m, ModelResponse))
        if done < turns:
            return ModelResponse(parts=[ToolCallPart("lookup", dict(QUERY),
                                                     tool_call_id=f"call_{done}")])
        return ModelResponse(parts=[TextPart("done")])

    def no_approval(_ctx: Any, _tool: Any, _args: Any) -> bool:
        made.asked[0] += 1
        return False

    def agent(toolset: Any, capabilities: list[Any]) -> Any:
        return Agent(FunctionModel(script), output_type=[str, DeferredToolRequests],
                     toolsets=[toolset], capabilities=capabilities)

    def runner(built: Any) -> Run:
        async def run() -> None:
            result = await built.run(PROMPT)
            expect_done(result.output, made.framework)
        return run

    made.runs = {
        "bare": runner(agent(FunctionToolset([lookup]), [])),
        "native": runner(agent(FunctionToolset([lookup]).approval_required(no_approval), [])),
        "signoff": runner(agent(FunctionToolset([lookup]), [Signoff(gate)])),
    }
    return made


def google_adk(turns: int, gate: Any) -> Agents:
    """A ``Runner`` over an ``InMemorySessionService`` and a scripted ``BaseLlm``, a new
    session per run; native: ``FunctionTool(require_confirmation=<callable returning
    False>)``."""
    os.environ["OTEL_SDK_DISABLED"] = "true"  # no telemetry export
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models import BaseLlm, LlmRequest, LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools import FunctionTool
    from google.genai import types

    from signoff.adapters.google_adk import SignoffPlugin

    made = Agents("Google ADK", "google-adk",
                  "FunctionTool(require_confirmation=<callable returning False>)", {})
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=1, candidates_token_count=1, total_token_count=2)

    class Scripted(BaseLlm):
        model: str = "scripted"

        async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                         ) -> AsyncIterator[LlmResponse]:
            done = sum(1 for c in llm_request.contents if c.role == "model")
            if done < turns:
                part = types.Part(function_call=types.FunctionCall(
                    name="lookup", args=dict(QUERY), id=f"call_{done}"))
            else:
                part = types.Part(text="done")
            yield LlmResponse(content=types.Content(role="model", parts=[part]),
                              usage_metadata=usage)

    def no_confirmation(query: str) -> bool:
        made.asked[0] += 1
        return False

    message = types.Content(role="user", parts=[types.Part(text=PROMPT)])

    def runner(tool: Any, plugins: list[Any]) -> Run:
        agent = LlmAgent(name="assistant", model=Scripted(), instruction="Help.", tools=[tool])
        service = InMemorySessionService()  # type: ignore[no-untyped-call]
        built = Runner(app=App(name="bench", root_agent=agent, plugins=plugins),
                       session_service=service)

        async def run() -> None:
            session = await service.create_session(app_name="bench", user_id="u")
            last = None
            async for event in built.run_async(user_id="u", session_id=session.id,
                                               new_message=message):
                last = event
            parts = last.content.parts if last is not None and last.content else None
            expect_done(parts[0].text if parts else None, made.framework)
            await service.delete_session(app_name="bench", user_id="u", session_id=session.id)
        return run

    class Hooks(BasePlugin):
        """The callbacks ``SignoffPlugin`` registers, each doing nothing: what ADK charges
        any plugin for them (its plugin manager runs each around every model and tool
        call), the floor under signoff's own work."""

        async def before_run_callback(self, **_: Any) -> None:
            return None

        async def before_model_callback(self, **_: Any) -> None:
            return None

        async def before_tool_callback(self, **_: Any) -> None:
            return None

        async def after_tool_callback(self, **_: Any) -> None:
            return None

        async def on_tool_error_callback(self, **_: Any) -> None:
            return None

    made.runs = {
        "bare": runner(FunctionTool(lookup), []),
        "native": runner(FunctionTool(lookup, require_confirmation=no_confirmation), []),
        "signoff": runner(FunctionTool(lookup), [SignoffPlugin(gate)]),
        "hooks": runner(FunctionTool(lookup), [Hooks(name="hooks")]),
    }
    return made


def agent_framework(turns: int, gate: Any) -> Agents:
    """``Agent.run`` on a new ``AgentSession`` with a scripted chat client (the framework's
    own function-invocation and middleware layers); native: a ``FunctionMiddleware`` that
    only calls on (a tool's ``approval_mode="never_require"`` is the default: the bare
    agent already has it)."""
    os.environ.setdefault("ENABLE_INSTRUMENTATION", "false")  # no OpenTelemetry spans
    from agent_framework import (
        Agent,
        BaseChatClient,
        ChatMiddlewareLayer,
        ChatResponse,
        Content,
        FunctionInvocationContext,
        FunctionInvocationLayer,
        FunctionMiddleware,
        Message,
        tool,
    )

    from signoff.adapters.agent_framework import SignoffMiddleware

    made = Agents("Microsoft Agent Framework", "agent-framework-core",
                  "a FunctionMiddleware whose process only awaits call_next", {})

    class Scripted(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any],
                   BaseChatClient[Any]):
        async def _respond(self, messages: Any) -> ChatResponse[Any]:
            done = sum(1 for m in messages for c in m.contents if c.type == "function_call")
            if done < turns:
                content = Content.from_function_call(call_id=f"call_{done}", name="lookup",
                                                     arguments=dict(QUERY))
            else:
                content = Content.from_text("done")
            return ChatResponse(messages=[Message(role="assistant", contents=[content])])

        def _inner_get_response(self, *, messages: Any, stream: bool, options: Any,
                                **kwargs: Any) -> Any:
            return self._respond(messages)

    class PassThrough(FunctionMiddleware):
        async def process(self, context: FunctionInvocationContext,
                          call_next: Callable[[], Awaitable[None]]) -> None:
            made.asked[0] += 1
            await call_next()

    def runner(middleware: list[Any]) -> Run:
        built = Agent(client=Scripted(), tools=[tool(lookup)], middleware=middleware)

        async def run() -> None:
            response = await built.run(PROMPT, session=built.create_session())
            expect_done(response.text, made.framework)
        return run

    made.runs = {
        "bare": runner([]),
        "native": runner([PassThrough()]),
        "signoff": runner([SignoffMiddleware(gate)]),
    }
    return made


BUILDERS: dict[str, Callable[[int, Any], Agents]] = {
    "openai-agents": openai_agents, "pydantic-ai": pydantic_ai,
    "google-adk": google_adk, "agent-framework": agent_framework,
}
