"""The shared suite's Pydantic AI driver: an ``Agent`` with the ``Signoff`` capability, a
scripted ``FunctionModel``, the paused run kept as ``Paused`` JSON in a file (Pydantic AI's
own message-history serialisation) and resumed by ``deferred_tool_results`` in new agent
objects; a subagent is an agent run inside the parent's ``delegate`` tool."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from bh_world import Driver, Script, Turn, World, tools
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from signoff.adapters.pydantic_ai import Paused, Signoff, request_ids


def scripted(script: Script) -> FunctionModel:
    """A model answering each call with the script's next turn (``script``: the driver, or a
    child's ``Script``, shared across models); records the tools offered."""
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        script.offered.append([t.name for t in info.function_tools])
        turn = script.next_turn()
        if isinstance(turn, str):
            return ModelResponse(parts=[TextPart(turn)])
        return ModelResponse(parts=[ToolCallPart(n, a, tool_call_id=i) for n, a, i in turn])

    return FunctionModel(answer)


def agent(script: Script, signoff: Signoff, functions: Sequence[Callable[..., Any]]
          ) -> Agent[None, Any]:
    return Agent(scripted(script), output_type=[str, DeferredToolRequests],
                 capabilities=[signoff], tools=list(functions))


class PydanticAIDriver(Driver):
    name = "pydantic-ai"

    def __init__(self, w: World) -> None:
        super().__init__(w)
        self.stored = w.tmp / "paused.json"  # the paused run, as the application keeps it
        self.interaction_mode = "interactive"
        self.wait = 300.0
        self.extra: list[Callable[..., Any]] = []
        self.last: str | None = None  # the last wake-up's paused run

    def _agent(self) -> Agent[None, Any]:
        """New objects each time, as a new process builds them, over ``w.gate`` now."""
        signoff = Signoff(self.w.gate, interaction_mode=self.interaction_mode,
                          subagent_wait=self.wait)
        return agent(self, signoff, [*tools(self.w.ledger), *self.extra])

    def _run(self, **kwargs: Any) -> list[str]:
        result = asyncio.run(self._agent().run(**kwargs))
        self._told(result.all_messages())
        if not isinstance(result.output, DeferredToolRequests):
            return []
        paused = Paused.of(result)
        self.stored.write_text(paused.dumps())
        return list(request_ids(paused.requests).values())

    def _told(self, messages: list[ModelMessage]) -> None:
        for message in messages:
            if not isinstance(message, ModelRequest):
                continue
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    content = part.content
                    self.seen(part.tool_call_id, content if isinstance(content, str)
                              else json.dumps(content, default=str))
                elif isinstance(part, RetryPromptPart) and part.tool_call_id:
                    self.seen(part.tool_call_id, part.model_response())

    def start(self, turns: Sequence[Turn], *, interaction_mode: str = "interactive",
              subagent_wait: float = 300.0) -> list[str]:
        self.queue.extend(turns)
        self.interaction_mode = interaction_mode
        self.wait = subagent_wait
        return self._run(user_prompt="go", conversation_id=self.w.thread)

    def resume(self, turns: Sequence[Turn] = ()) -> list[str]:
        self.queue.extend(turns)
        assert self.stored.exists(), "the run is not paused"
        self.last = self.stored.read_text()
        return self._run(**Paused.loads(self.last).resume_kwargs())

    def replay(self) -> list[str]:
        assert self.last is not None
        return self._run(**Paused.loads(self.last).resume_kwargs())

    def delegating(self, parent: Sequence[Turn], child: Sequence[Turn], *,
                   subagent_wait: float, interaction_mode: str = "interactive") -> list[str]:
        w, script = self.w, Script(child)

        async def delegate(task: str) -> str:
            """Hand a task to a subagent."""
            sub = agent(script, Signoff(w.gate, subagent_wait=subagent_wait), tools(w.ledger))
            return str((await sub.run(task, conversation_id=f"{w.thread}-child")).output)

        self.extra = [delegate]
        return self.start(parent, subagent_wait=subagent_wait,
                          interaction_mode=interaction_mode)
