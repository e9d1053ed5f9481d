"""The child bridge: an agent run inside a gated tool call is that call's subagent.

While ``SignoffMiddleware`` runs a tool it holds the call in a context variable; a
``SignoffMiddleware`` whose run starts inside it (deepagents' ``task`` tool invoking a
subagent graph, or any tool that runs an agent) takes the parent's facts as its own
trusted context: ``parent_call`` = the tool call id (so its requests are labelled with
it in the inbox and its asks wait in place, never pausing the parent's graph), and the
parent run's interaction mode, review mode, principal and session (a child of an
unattended run is unattended; a child never runs in a laxer mode than its parent).

The context variable is set only by the tool hook, never from input: a model or a
public caller cannot make a run a child. Contexts travel with LangGraph's executors
(they copy the caller's context), so the child reads it in its own task.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from signoff.adapters.langchain.run import SignoffContext
from signoff.model import RunContext


@dataclass(frozen=True, slots=True)
class ParentCall:
    """The gated tool call a child run happens in."""

    call_id: str
    run: RunContext


_PARENT: ContextVar[ParentCall | None] = ContextVar("signoff_parent_call", default=None)


@contextmanager
def running(call_id: str, run: RunContext | None) -> Iterator[ParentCall | None]:
    """Hold ``call_id`` as the parent of any run that starts while its tool runs."""
    if run is None:
        yield None
        return
    parent = ParentCall(call_id=call_id, run=run)
    token = _PARENT.set(parent)
    try:
        yield parent
    finally:
        _PARENT.reset(token)


def inherited(trusted: SignoffContext | None) -> SignoffContext | None:
    """The trusted context of a run starting now: the application's own, if it named a
    parent (made unattended, though, inside an unattended parent's call: a child never
    runs laxer than its parent); else, inside a gated tool call, the parent's facts;
    else the application's."""
    parent = _PARENT.get()
    if parent is None:
        return trusted
    run = parent.run
    if trusted is not None and trusted.parent_call:
        if run.interaction_mode.unattended:
            return dataclasses.replace(trusted, interaction_mode=run.interaction_mode)
        return trusted
    return SignoffContext(
        parent_call=parent.call_id,
        interaction_mode=run.interaction_mode,
        review_mode=run.review_mode,
        mode_setter=run.mode_setter,
        principal=run.principal,
        session_id=run.session_id)
