"""Where a gated call belongs: its thread, run, principal, interaction mode and, inside
another gated call (an agent used as a tool), that call as its ``parent_call``.

The thread comes from the run's context when it is a mapping holding ``THREAD_KEY`` (a
mapping context is stored with the SDK's ``RunState``, so a resumed run keeps it), else
from ``gate_agent(thread_id=…)``. A call with no thread is refused: signoff finds a paused
call's request again by its thread and call id, so without one an approval could never be
matched to its call. The review mode is the thread's (set in the inbox or by an operator)
unless the application fixes one (``gate_agent(review_mode=…)``); the policy clamps either
to the operator's ceiling.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from signoff.kernel.protocol import GateProtocol
from signoff.model import InteractionMode, ReviewMode, RunContext

THREAD_KEY = "signoff_thread_id"
CONTEXTS_KEPT = 256
RUN_KEY = "signoff_run_id"

# The gated call whose tool is running now, and its run's context: a gated call made
# inside it is its child.
PARENT_CALL: ContextVar[tuple[str, RunContext] | None] = ContextVar(
    "signoff_openai_agents_parent_call", default=None)


@dataclass(frozen=True, slots=True)
class Scope:
    """What ``gate_agent`` was given: the gate and the defaults of every call's context."""

    gate: GateProtocol
    thread_id: str | None
    interaction_mode: InteractionMode
    principal: str | None
    subagent_wait: float = 300.0
    review_mode: ReviewMode | None = None  # None: the thread's mode, else the policy default
    # (thread, run, parent call) → the context last built for them: a run's calls share one
    # (both hooks of every call ask for it), so it is checked and built once, not per call.
    _made: dict[tuple[str | None, str | None, tuple[str, RunContext] | None], RunContext] = field(
        default_factory=dict, compare=False, repr=False)

    def context(self, app_context: Any) -> RunContext:
        """The call's ``RunContext``: the run context's mapping keys first, then ours. Inside
        another gated call (an agent used as a tool) it is that call's child, and never
        laxer than its parent: an unattended parent makes it unattended, and it takes the
        parent's principal and review mode where ``gate_agent`` gave none."""
        thread, run = self.thread_id, None
        if isinstance(app_context, Mapping):
            thread = _text(app_context.get(THREAD_KEY)) or thread
            run = _text(app_context.get(RUN_KEY))
        parent = PARENT_CALL.get()
        key = (thread, run, parent)
        made = self._made.get(key)
        if made is None:
            interaction, principal = self.interaction_mode, self.principal
            review = self.review_mode
            if parent is not None:
                outer = parent[1]
                if outer.interaction_mode.unattended:
                    interaction = outer.interaction_mode
                principal = principal or outer.principal
                review = review or outer.review_mode
            made = RunContext(thread_id=thread, run_id=run, principal=principal,
                              interaction_mode=interaction, review_mode=review,
                              parent_call=parent[0] if parent is not None else None)
            if len(self._made) >= CONTEXTS_KEPT:
                self._made.clear()
            self._made[key] = made
        return made


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
