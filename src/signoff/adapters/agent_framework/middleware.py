"""``SignoffMiddleware``: the one line an application adds, ``Agent(...,
middleware=[SignoffMiddleware(gate)])``.

signoff needs two hooks of the framework: one around each function call (``calls``: the
gate's verdict, the pause, the claimed run) and one around each model call (``turns``:
the clarification tool withdrawn when nobody would answer, the turn's call ids checked).
The framework files a middleware object under one kind only, so ``SignoffMiddleware`` is
the framework's ``MiddlewareBundle`` of the two: an indivisible unit, installed whole on an
agent or a chat client, and refused loudly (``MiddlewareException``) by a seam that could
install only part of it — never dropped with a warning, leaving calls ungated. The
framework marks bundles experimental; that notice is silenced for signoff's own bundle
only (the warning filter is scoped to the class statement and the constructor).
"""

from __future__ import annotations

import warnings

from agent_framework import MiddlewareBundle
from agent_framework._feature_stage import ExperimentalWarning

from signoff.adapters.agent_framework.calls import CallGate
from signoff.adapters.agent_framework.ids import CallIds
from signoff.adapters.agent_framework.runs import Runs
from signoff.adapters.agent_framework.turns import ModelTurns
from signoff.kernel.protocol import GateProtocol
from signoff.model import InteractionMode, ReviewMode

AGENT = "agent-framework"


with warnings.catch_warnings():
    warnings.simplefilter("ignore", ExperimentalWarning)

    class _Bundle(MiddlewareBundle):
        """The framework's bundle, subclassed once here, under the filter."""


class SignoffMiddleware(_Bundle):
    """``Agent(..., middleware=[SignoffMiddleware(gate)])``: allow / deny / ask per call.

    ``thread_id``: the signoff thread of calls made without a session (with one, its
    ``session_id``). ``review_mode`` / ``interaction_mode`` / ``principal``: the run's
    context, fixed when the session's run starts (its first model call or call).
    ``subagent_wait``: how long an ask of a subagent (an agent run inside a gated call)
    waits in place. ``clarification_tool``: the tool withdrawn when nobody would answer
    (the policy's ``clarification_tool`` by default). The same object goes in a chat
    client's own middleware list; ``parts`` are its function and chat middleware."""

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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExperimentalWarning)
            super().__init__(self.parts)
        # An in-process gate still under its default name proposes as this framework.
        if getattr(gate, "agent", None) == "agent":
            gate.agent = AGENT  # type: ignore[attr-defined]
