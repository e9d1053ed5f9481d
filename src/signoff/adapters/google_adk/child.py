"""The child bridge: an agent run inside a gated tool call is that call's subagent.

ADK runs an agent as another's tool (``AgentTool``) inside the parent's call: a new
``Runner`` over an in-memory session, discarded when the tool returns, under the parent's
plugins (``include_plugins``, ADK's default). So the same ``SignoffPlugin`` judges the
child's calls, but ADK hands them nothing that names the call that started the child, and
a pause there could never be resumed (``AgentTool`` cannot resume its nested session). So
while a call runs the plugin holds it in a context variable, and a run that starts inside
it takes the parent's facts: ``parent_call`` = the call id (its requests are labelled
with it in the inbox, and its asks wait in place instead of pausing), the parent's
thread (so the thread's review mode, grants and remembered rejections are the child's
too, and the gate lets a subagent's run propose beside its parent's paused calls), its
principal, and its interaction mode when that is unattended (a child of an unattended run
is unattended). The child's run is its own invocation.

ADK runs each call of a turn in a task of its own, started from the context its
before-tool callbacks left (``_start_execute_task`` in ADK's ``_batch_executor``): the
tool, and any runner it starts, sees what the plugin held, and neither the call's siblings
nor the rest of the flow do. The plugin releases it after the call anyway, so a flow that
ran a call outside a task of its own would not leave it held. Only the plugin sets the
variable, never input: a model cannot make a run a child.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from signoff.model import RunContext


@dataclass(frozen=True, slots=True)
class ParentCall:
    """The gated call a child run happens in, and what was held before it."""

    call_id: str
    run: RunContext
    outer: ParentCall | None


_PARENT: ContextVar[ParentCall | None] = ContextVar("signoff_adk_parent_call", default=None)


def hold(call_id: str, run: RunContext) -> None:
    """Hold ``call_id`` as the parent of any run that starts while its tool runs (ADK runs
    the tool after the callback returns, in the callback's task)."""
    _PARENT.set(ParentCall(call_id, run, _PARENT.get()))


def release(call_id: str | None, run_id: str | None) -> None:
    """The call is over: hold what was held before it."""
    held = _PARENT.get()
    if held is not None and held.call_id == call_id and held.run.run_id == run_id:
        _PARENT.set(held.outer)


@contextmanager
def running(call_id: str, run: RunContext) -> Iterator[None]:
    """Hold ``call_id`` while the plugin runs a claimed call itself."""
    token = _PARENT.set(ParentCall(call_id, run, _PARENT.get()))
    try:
        yield
    finally:
        _PARENT.reset(token)


def parent(run_id: str) -> ParentCall | None:
    """The call the run ``run_id`` (an invocation) started in, if it is a child. A call held
    by this same invocation is not its parent: the runner that started inside it is."""
    held = _PARENT.get()
    return held if held is not None and held.run.run_id != run_id else None


def inherited(own: RunContext, held: ParentCall) -> RunContext:
    """A child's context: its own run on the parent's thread, labelled with the parent call,
    with the parent's principal (if it has none) and an unattended parent's interaction
    mode."""
    parent_run = held.run
    interaction = parent_run.interaction_mode
    return dataclasses.replace(
        own, thread_id=parent_run.thread_id, parent_call=held.call_id,
        principal=own.principal or parent_run.principal,
        interaction_mode=interaction if interaction.unattended else own.interaction_mode)
