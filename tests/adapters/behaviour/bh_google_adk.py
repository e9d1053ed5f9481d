"""The shared suite's Google ADK driver: an ``App`` with ``SignoffPlugin``, a scripted
``BaseLlm``, ADK's ``SqliteSessionService`` (the paused run, across processes), resume by
``resume_message``, and a subagent as ADK nests one: an ``AgentTool``."""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

os.environ["OTEL_SDK_DISABLED"] = "true"  # no telemetry export, ever

from bh_world import Driver, Script, Turn, World, tools
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import BaseModel

from signoff.adapters.google_adk import SignoffPlugin, pauses, resume_message

APP = "shared"
USER = "u1"


def content(turn: Turn) -> types.Content:
    """A script's turn as the model's content: its function calls, or its text."""
    if isinstance(turn, str):
        return types.Content(role="model", parts=[types.Part(text=turn)])
    return types.Content(role="model", parts=[
        types.Part(function_call=types.FunctionCall(name=n, args=a, id=i)) for n, a, i in turn])


class QueueLlm(BaseLlm):
    """Answers each model call with the script's next turn; records the tools offered and,
    through ``told``, what the model read back for each call id."""

    model: str = "scripted"
    script: Any = None  # the driver, or a child's ``Script``
    told: Callable[[str, str], None] | None = None

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.script.offered.append([d.name for t in llm_request.config.tools or []
                                    for d in getattr(t, "function_declarations", None) or []])
        for shown in llm_request.contents:
            for part in shown.parts or []:
                answer = part.function_response
                if answer is not None and answer.id and self.told is not None:
                    self.told(answer.id, json.dumps(answer.response, sort_keys=True))
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2)
        yield LlmResponse(content=content(self.script.next_turn()), usage_metadata=usage)


class Task(BaseModel):
    task: str


class NestedAgentTool(AgentTool):
    """ADK's ``AgentTool`` as is, but for a ``DeprecationWarning`` ADK raises from its own
    code: it starts the child's ``Runner`` with ``plugins=`` (deprecated in favour of an
    ``App``) to inherit the parent's plugins."""

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "The `plugins` argument is deprecated",
                                    DeprecationWarning)
            return await super().run_async(args=args, tool_context=tool_context)


class GoogleADKDriver(Driver):
    name = "google-adk"

    def __init__(self, w: World) -> None:
        super().__init__(w)
        self.interaction_mode = "interactive"
        self.wait = 300.0
        self.extra: Callable[[], list[BaseTool]] = list
        self.last: types.Content | None = None  # the last wake-up

    def _runner(self) -> Runner:
        """New objects over the same files, as a new process builds them."""
        agent = LlmAgent(name="assistant", model=QueueLlm(script=self, told=self.seen),
                         instruction="Help.", tools=[*tools(self.w.ledger), *self.extra()])
        plugin = SignoffPlugin(self.w.gate, interaction_mode=self.interaction_mode,
                               subagent_wait=self.wait)
        return Runner(app=App(name=APP, root_agent=agent, plugins=[plugin]),
                      session_service=SqliteSessionService(str(self.w.tmp / "sessions.db")))

    def _run(self, message: types.Content | None, *, create: bool = False) -> list[str]:
        """One ``run_async`` to its end (``message`` ``None``: the session's wake-up, kept as
        ``last``); the request ids the session is paused on."""
        runner = self._runner()

        async def go() -> list[str]:
            service = runner.session_service
            if create:
                await service.create_session(app_name=APP, user_id=USER,
                                             session_id=self.w.thread)
            wake = message
            if wake is None:
                session = await service.get_session(app_name=APP, user_id=USER,
                                                    session_id=self.w.thread)
                wake = self.last = resume_message(session)
                assert wake.parts, "the run is not paused"
            async for _ in runner.run_async(user_id=USER, session_id=self.w.thread,
                                            new_message=wake):
                pass
            session = await service.get_session(app_name=APP, user_id=USER,
                                                session_id=self.w.thread)
            await runner.close()
            assert session is not None
            return [p.request_id for p in pauses(session.events)]

        return asyncio.run(go())

    def start(self, turns: Sequence[Turn], *, interaction_mode: str = "interactive",
              subagent_wait: float = 300.0) -> list[str]:
        self.queue.extend(turns)
        self.interaction_mode = interaction_mode
        self.wait = subagent_wait
        return self._run(types.Content(role="user", parts=[types.Part(text="go")]), create=True)

    def resume(self, turns: Sequence[Turn] = ()) -> list[str]:
        self.queue.extend(turns)
        return self._run(None)

    def replay(self) -> list[str]:
        assert self.last is not None
        return self._run(self.last)

    def delegating(self, parent: Sequence[Turn], child: Sequence[Turn], *,
                   subagent_wait: float, interaction_mode: str = "interactive") -> list[str]:
        script = Script(child)

        def delegate() -> list[BaseTool]:
            """ADK's agent as a tool: the child runs inside the ``delegate`` call, under the
            runner's plugins (``include_plugins``, the default)."""
            sub = LlmAgent(name="delegate", description="Hand a task to a subagent.",
                           model=QueueLlm(script=script), input_schema=Task,
                           instruction="Do the task.", tools=tools(self.w.ledger))
            return [NestedAgentTool(sub)]

        self.extra = delegate
        return self.start(parent, subagent_wait=subagent_wait, interaction_mode=interaction_mode)
