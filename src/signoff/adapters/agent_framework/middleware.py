"""``SignoffMiddleware``: the one line an application adds, ``Agent(...,
middleware=[SignoffMiddleware(gate)])``.

signoff needs two hooks of the framework: one around each function call (``calls``: the
gate's verdict, the pause, the claimed run) and one around each model call (``turns``:
the clarification tool withdrawn when nobody would answer, the turn's call ids checked).
The framework files a middleware object under one kind only, so ``SignoffMiddleware`` is
an agent middleware that hands both to every run it wraps, in the run's own chat-client
middleware (``AgentContext.client_kwargs``), after any the application gave.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agent_framework import AgentContext, AgentMiddleware

from signoff.adapters.agent_framework.calls import CallGate
from signoff.adapters.agent_framework.ids import CallIds
from signoff.adapters.agent_framework.runs import Runs
from signoff.adapters.agent_framework.turns import ModelTurns
from signoff.kernel.protocol import GateProtocol
from signoff.model import InteractionMode, ReviewMode

AGENT = "agent-framework"


class SignoffMiddleware(AgentMiddleware):
    """``Agent(..., middleware=[SignoffMiddleware(gate)])``: allow / deny / ask per call.

    ``thread_id``: the signoff thread of calls made without a session (with one, its
    ``session_id``). ``review_mode`` / ``interaction_mode`` / ``principal``: the run's
    context, fixed when the session's run starts (its first model call or call).
    ``subagent_wait``: how long an ask of a subagent (an agent run inside a gated call)
    waits in place. ``clarification_tool``: the tool withdrawn when nobody would answer
    (the policy's ``clarification_tool`` by default). ``parts``: the function and chat
    middleware, for a chat client's own middleware list (which takes no agent
    middleware)."""

    def __init__(self, gate: GateProtocol, *, principal: str | None = None,
                 interaction_mode: InteractionMode | str = InteractionMode.INTERACTIVE,
                 review_mode: ReviewMode | str | None = None,
                 thread_id: str | None = None, subagent_wait: float = 300.0,
                 clarification_tool: str | None = None) -> None:
        self.gate = gate
        runs = Runs(gate, principal=principal, interaction_mode=InteractionMode(interaction_mode),
                    review_mode=ReviewMode(review_mode) if review_mode is not None else None,
                    thread_id=thread_id)
        ids = CallIds()
        self.calls = CallGate(gate, runs, ids, subagent_wait=subagent_wait)
        self.turns = ModelTurns(gate, runs, ids,
                                clarification_tool or gate.config.clarification_tool)
        self.parts: tuple[CallGate, ModelTurns] = (self.calls, self.turns)
        # An in-process gate still under its default name proposes as this framework.
        if getattr(gate, "agent", None) == "agent":
            gate.agent = AGENT  # type: ignore[attr-defined]

    async def process(self, context: AgentContext,
                      call_next: Callable[[], Awaitable[None]]) -> None:
        given: Any = context.client_kwargs.get("middleware")
        given = [] if given is None else list(given) if isinstance(given, (list, tuple)) \
            else [given]
        context.client_kwargs["middleware"] = [
            *given, *(part for part in self.parts if not any(part is g for g in given))]
        await call_next()
