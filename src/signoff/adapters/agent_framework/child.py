"""The child bridge: an agent run inside a gated call is that call's subagent.

Agent Framework runs an agent as another's tool (``agent.as_tool()``) inside the parent's
function call, and does not carry the child's approval requests to the parent ("Child
function approvals are not propagated into the calling agent": ``Agent.as_tool`` in
``agent_framework/_agents.py``). So while ``SignoffMiddleware`` runs a call it holds it in
a context variable, and a ``SignoffMiddleware`` called inside it takes the parent's facts:
``parent_call`` = the call id (its requests are labelled with it in the inbox), the
parent's thread, interaction mode, review mode and principal — and its asks wait in place
for a decision instead of pausing a run nobody would resume.

Only the middleware sets the variable, never input: a model cannot make a run a child.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from signoff.model import RunContext

_PARENT: ContextVar[tuple[str, RunContext] | None] = ContextVar(
    "signoff_agent_framework_parent", default=None)


@contextmanager
def running(call_id: str, run: RunContext) -> Iterator[None]:
    """Hold ``call_id`` as the parent of any gated call made while it runs."""
    token = _PARENT.set((call_id, run))
    try:
        yield
    finally:
        _PARENT.reset(token)


def child_run() -> RunContext | None:
    """The run of a call made inside a gated call (its subagent's), or ``None``."""
    parent = _PARENT.get()
    if parent is None:
        return None
    call_id, run = parent
    return RunContext(thread_id=run.thread_id, run_id=f"{run.run_id}:{call_id}",
                      review_mode=run.review_mode, interaction_mode=run.interaction_mode,
                      principal=run.principal, parent_call=call_id)
