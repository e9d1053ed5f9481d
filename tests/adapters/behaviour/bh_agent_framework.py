"""The shared suite's Microsoft Agent Framework driver: an ``Agent`` with ``SignoffMiddleware``,
a scripted chat client built on the framework's own ``BaseChatClient`` layers, the
``AgentSession`` kept as JSON (``to_dict`` / ``from_dict``) with the approval requests it
waits on, and a resume by ``wake_up``. A subagent is an agent as the parent's tool
(``Agent.as_tool``)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

os.environ.setdefault("ENABLE_INSTRUMENTATION", "false")  # no OpenTelemetry spans

from agent_framework import (
    Agent,
    AgentResponse,
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
from bh_world import Driver, Script, Turn, World, tools

from signoff.adapters.agent_framework import SignoffMiddleware, request_ids, wake_up


class QueueClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """Answers each model call with the script's next turn; records the tools offered and,
    through ``driver.seen``, the function results the model read (``script``: the driver,
    or a child's ``Script``, shared across clients)."""

    def __init__(self, script: Script, driver: Driver) -> None:
        super().__init__()
        self.script = script
        self.driver = driver

    def _next(self, messages: Sequence[Message], options: Any) -> list[Content]:
        offered = (options or {}).get("tools") or []
        self.script.offered.append([getattr(t, "name", None) or t.get("name") for t in offered])
        for message in messages:
            for content in message.contents:
                if content.type == "function_result" and content.call_id:
                    self.driver.seen(str(content.call_id), _text(content.result))
        turn = self.script.next_turn()
        if isinstance(turn, str):
            return [Content.from_text(turn)]
        return [Content.from_function_call(call_id=i, name=n, arguments=json.dumps(a))
                for n, a, i in turn]

    async def _respond(self, messages: Sequence[Message], options: Any) -> ChatResponse[Any]:
        return ChatResponse(messages=[Message(role="assistant",
                                              contents=self._next(messages, options))])

    async def _updates(self, messages: Sequence[Message],
                       options: Any) -> AsyncIterator[ChatResponseUpdate]:
        yield ChatResponseUpdate(role="assistant", contents=self._next(messages, options))

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool,
                            options: Any, **kwargs: Any) -> Any:
        if stream:  # an agent run as a tool (``as_tool``) streams
            return self._build_response_stream(self._updates(messages, options))
        return self._respond(messages, options)


def _text(result: Any) -> str:
    if isinstance(result, list):
        return "\n".join(_text(r) for r in result)
    if isinstance(result, Content):
        return result.text if result.type == "text" and result.text is not None \
            else json.dumps(result.to_dict())
    return result if isinstance(result, str) else json.dumps(result)


class AgentFrameworkDriver(Driver):
    name = "agent-framework"

    def __init__(self, w: World) -> None:
        super().__init__(w)
        self.session_file = w.tmp / "maf-session.json"  # the session and what it waits on
        self.interaction_mode = "interactive"
        self.wait = 300.0
        self.extra: list[FunctionTool] = []
        self.last: tuple[str, list[dict[str, Any]]] | None = None  # the last wake-up's input

    def _agent(self) -> Agent[Any]:
        """New objects each time, as a new process builds them, over ``self.w.gate``."""
        return Agent(client=QueueClient(self, self),
                     tools=[*(tool(f) for f in tools(self.w.ledger)), *self.extra],
                     middleware=[SignoffMiddleware(self.w.gate,
                                                   interaction_mode=self.interaction_mode,
                                                   subagent_wait=self.wait)])

    def _run(self, message: Any, session: AgentSession) -> list[str]:
        response: AgentResponse[Any] = asyncio.run(self._agent().run(message, session=session))
        waiting = [c.to_dict() for c in response.user_input_requests]
        self.session_file.write_text(json.dumps({"session": session.to_dict(),
                                                 "waiting": waiting}))
        return request_ids(response)

    def _wake(self, stored: tuple[str, list[dict[str, Any]]]) -> list[str]:
        session_text, waiting = stored
        assert waiting, "the run is not paused"
        session = AgentSession.from_dict(json.loads(session_text))
        return self._run(wake_up([Content.from_dict(c) for c in waiting]), session)

    def start(self, turns: Sequence[Turn], *, interaction_mode: str = "interactive",
              subagent_wait: float = 300.0) -> list[str]:
        self.queue.extend(turns)
        self.interaction_mode = interaction_mode
        self.wait = subagent_wait
        return self._run("go", AgentSession(session_id=self.w.thread))

    def resume(self, turns: Sequence[Turn] = ()) -> list[str]:
        self.queue.extend(turns)
        kept = json.loads(self.session_file.read_text())
        self.last = (json.dumps(kept["session"]), kept["waiting"])
        return self._wake(self.last)

    def replay(self) -> list[str]:
        """The last wake-up delivered again on the session as it was stored when it was
        first sent (a retrying sender holds that copy)."""
        assert self.last is not None
        return self._wake(self.last)

    def delegating(self, parent: Sequence[Turn], child: Sequence[Turn], *,
                   subagent_wait: float, interaction_mode: str = "interactive") -> list[str]:
        # the child has no mode of its own: the middleware makes it the running call's child
        sub = Agent(client=QueueClient(Script(child), self), name="worker",
                    tools=[tool(f) for f in tools(self.w.ledger)],
                    middleware=[SignoffMiddleware(self.w.gate, subagent_wait=subagent_wait)])
        self.extra = [sub.as_tool(name="delegate", description="Hand a task to a subagent.")]
        return self.start(parent, subagent_wait=subagent_wait, interaction_mode=interaction_mode)
