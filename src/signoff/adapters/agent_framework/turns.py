"""``ModelTurns``: the chat middleware half of ``SignoffMiddleware``, around each model call.

A function middleware sees a call only once the model made it; what the model is
offered, and which calls of its turn can be bound to a decision, are decided around the
model call:

* in ``full`` review mode (as the operator's ceiling lets it be) and in an unattended run
  nobody will answer a clarifying question, so the policy's clarification tool is
  withdrawn from the tools offered and the instructions say to go on without asking (as
  the LangChain middleware does). The framework still knows the tool: a call the model
  makes anyway reaches the gate, whose policy refuses it (``clarification_withdrawn``);
* the turn's call ids are checked (``ids``) before the framework runs its calls.

The options are replaced, never changed in place: the framework shares its tool list
between the model and the calls it runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agent_framework import ChatContext, ChatMiddleware, ChatResponse

from signoff.adapters.agent_framework.ids import CallIds
from signoff.adapters.agent_framework.runs import Runs
from signoff.adapters.telling import FULL_MODE_NOTE
from signoff.kernel.protocol import GateProtocol
from signoff.model import ReviewMode, RunContext
from signoff.policy.modes import clamp


class ModelTurns(ChatMiddleware):
    def __init__(self, gate: GateProtocol, runs: Runs, ids: CallIds,
                 clarification_tool: str | None) -> None:
        self.gate = gate
        self.runs = runs
        self.ids = ids
        self.clarification = clarification_tool

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]
                      ) -> None:
        run = self.runs.known(context.session)
        if run is None:
            run = await asyncio.to_thread(self.runs.of, context.session)
        if self.clarification and no_human(run, self.gate.config.ceiling):
            context.options = withdrawn(context.options or {}, self.clarification)
        history = list(context.messages)

        def check(response: ChatResponse[Any]) -> ChatResponse[Any]:
            self.ids.check_turn(run.thread_id, response.messages, history)
            return response

        if context.stream:  # the framework runs the calls of the finished stream's response
            context.stream_result_hooks.append(check)
        await call_next()
        if isinstance(context.result, ChatResponse):
            check(context.result)


def no_human(run: RunContext, ceiling: ReviewMode) -> bool:
    """Full mode (as the operator's ceiling lets it be) or an unattended run: nobody will
    answer a clarifying question."""
    mode = clamp(run.review_mode or ReviewMode.MANUAL, ceiling)
    return mode is ReviewMode.FULL or run.interaction_mode.unattended


def withdrawn(options: Mapping[str, Any], tool: str) -> dict[str, Any]:
    """The options without ``tool``, their instructions saying to go on without asking."""
    tools = [t for t in options.get("tools") or () if _name(t) != tool]
    instructions = options.get("instructions")
    if instructions is None:
        note: str | list[str] = FULL_MODE_NOTE
    elif isinstance(instructions, str):
        note = f"{instructions}\n\n{FULL_MODE_NOTE}"
    else:
        note = [*instructions, FULL_MODE_NOTE]
    return {**options, "tools": tools, "instructions": note}


def _name(tool: Any) -> str | None:
    """A tool's name: a ``FunctionTool`` (or any tool object) or a provider's dict."""
    if isinstance(tool, Mapping):
        function = tool.get("function")
        named = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        return str(named) if named is not None else None
    named = getattr(tool, "name", None)
    return named if isinstance(named, str) else None

