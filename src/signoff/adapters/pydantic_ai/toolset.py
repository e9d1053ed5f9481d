"""``SignoffToolset``: every tool call of a Pydantic AI run judged by the gate, as it is made.

A ``WrapperToolset`` around the agent's assembled toolset (``Signoff`` puts it there), so
it sees each call after Pydantic AI has validated its arguments and run its hooks — the
arguments the tool would really receive, in their JSON form (the form
``DeferredToolRequests.validated_args`` shows; one that does not bring back exactly what
the tool would receive is refused: nobody could review it). Each call is proposed:

- allowed: it runs;
- denied or blocked: a ``ToolFailed`` with the verdict's message — a failed tool return
  the model reads, the run goes on, no retry budget is spent;
- ask: ``ApprovalRequired`` carrying the request id — Pydantic AI's own pause: the run
  ends with ``DeferredToolRequests`` (its ``metadata`` names the request per call).

A resumed call (``deferred_tool_results``) comes back here, and its answer is read from
the store, never from the resume value: an approved request is claimed (a compare-and-set,
so a replayed resume finds it executed and returns the stored result), exactly the
approved arguments run — an approver's edit included, validated by the tool's own schema
— and the result is reported. Still pending pauses again; rejected, expired, cancelled or
invalidated is told to the model. Arguments changed by the resume (``override_args``)
are not what a human reviewed: refused.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from signoff.adapters import proposing
from signoff.adapters.pydantic_ai.answers import (
    ARGS_CHANGED,
    BAD_ID,
    REUSED_ID,
    SUBAGENT_WAITED,
    UNSEEN,
    edit_note,
    not_run,
    with_note,
)
from signoff.adapters.pydantic_ai.ids import used_ids, why_bad
from signoff.canonical import args_hash
from signoff.errors import Conflict
from signoff.extras import absent
from signoff.kernel.execution import Execution, _current
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.kernel.protocol import GateProtocol
from signoff.model import RunContext, ToolCall

try:
    import anyio.to_thread
    from pydantic_ai import RunContext as AgentContext
    from pydantic_ai.exceptions import ApprovalRequired, ToolFailed
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.toolsets import WrapperToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool
    from pydantic_core import to_jsonable_python
except ImportError as exc:
    raise absent("pydantic-ai", __name__, exc) from exc

METADATA_KEY = "signoff"  # DeferredToolRequests.metadata[call id][METADATA_KEY]["request_id"]

# The gated call whose tool is running now, and its run's context: an agent started
# inside it is its subagent.
running_call: contextvars.ContextVar[tuple[str | None, RunContext | None] | None] = \
    contextvars.ContextVar("signoff_pydantic_ai_call", default=None)

T = TypeVar("T")


@dataclass
class SignoffToolset(WrapperToolset[Any]):
    """The wrapped toolset's calls, each proposed to ``gate`` under ``context``."""

    gate: GateProtocol | None = None
    context: RunContext = dataclasses.field(default_factory=RunContext)
    subagent_wait: float = 300.0

    async def _gate(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A gate call in a worker thread: the store never blocks the event loop."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: AgentContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        gate = self.gate
        if gate is None:  # built without one: nothing may run ungated
            raise ToolFailed("[signoff] No gate is set up for this toolset; the call did not run.")
        call_id = ctx.tool_call_id
        why = bad_id(ctx.messages, call_id)
        if why is not None or call_id is None:
            raise ToolFailed(BAD_ID.format(why=why or "no id"))
        shown = shown_args(tool_args, ctx, tool)
        context = self.context
        if not context.thread_id:  # used without the capability: the run's own ids
            context = dataclasses.replace(context, thread_id=ctx.conversation_id,
                                          run_id=ctx.run_id)
        try:
            proposal = await proposing.propose(gate, ToolCall(id=call_id, name=name, args=shown),
                                               context, hop=anyio.to_thread.run_sync)
        except Conflict as exc:
            if exc.code != "call_id_reused":
                raise
            raise ToolFailed(ARGS_CHANGED if ctx.tool_call_approved
                             else REUSED_ID.format(message=exc.message)) from None
        if proposal.kind is ProposalKind.ALLOWED:
            return await self._run(name, tool_args, ctx, tool)
        if proposal.kind in (ProposalKind.DENIED, ProposalKind.BLOCKED):
            raise ToolFailed(f"[signoff] {proposal.verdict.message}")
        assert proposal.request is not None
        request_id = proposal.request.id
        outcome = await self._gate(gate.outcome, request_id)
        if outcome.kind is OutcomeKind.PENDING and context.parent_call:
            outcome = await self._wait_in_place(gate, request_id)
        if outcome.kind is OutcomeKind.PENDING:
            raise ApprovalRequired(metadata={METADATA_KEY: {
                "request_id": request_id, "risk": proposal.request.risk.value,
                "args_hash": proposal.request.args_hash}})
        if outcome.kind is OutcomeKind.APPROVED:
            claimed = await self._gate(gate.claim, request_id)
            if isinstance(claimed, Execution):
                return await self._run_claimed(gate, claimed, outcome, name=name,
                                               tool_args=tool_args, shown=shown, ctx=ctx,
                                               tool=tool)
            outcome = claimed
        return answer(outcome)

    async def _wait_in_place(self, gate: GateProtocol, request_id: str) -> Outcome:
        """A subagent cannot pause its parent's run: it waits for the decision, then
        withdraws the request and fails closed."""
        outcome = await self._gate(gate.wait, request_id, timeout=self.subagent_wait)
        if outcome.kind is not OutcomeKind.PENDING:
            return outcome
        await self._gate(gate.cancel, request_id, actor=None,
                         reason="the subagent stopped waiting for a decision")
        raise ToolFailed(SUBAGENT_WAITED.format(seconds=self.subagent_wait))

    async def _run(self, name: str, tool_args: dict[str, Any], ctx: AgentContext[Any],
                   tool: ToolsetTool[Any]) -> Any:
        token = running_call.set((ctx.tool_call_id, self.context))
        try:
            return await super().call_tool(name, tool_args, ctx, tool)
        finally:
            running_call.reset(token)

    async def _run_claimed(self, gate: GateProtocol, execution: Execution, outcome: Outcome, *,
                           name: str, tool_args: dict[str, Any], shown: dict[str, Any],
                           ctx: AgentContext[Any], tool: ToolsetTool[Any]) -> Any:
        """Exactly the approved arguments, under the claim; what they did, reported."""
        try:
            args = tool_args
            if args_hash(execution.args) != args_hash(shown):  # an approver's edit
                args = tool.args_validator.validate_python(
                    execution.args, context=ctx.validation_context)
        except Exception as exc:
            await self._gate(gate.report, execution,
                             error=f"the approved arguments do not validate: {exc}")
            raise ToolFailed(f"[signoff] The approved arguments do not fit the tool ({exc}); "
                             "the call did not run.") from None
        token = _current.set(execution)
        try:
            result = await self._run(name, args, dataclasses.replace(ctx, tool_call_approved=True),
                                     tool)
        except BaseException as exc:
            await self._gate(gate.report, execution, error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            _current.reset(token)
        await self._gate(gate.report, execution,
                         result=to_jsonable_python(result, serialize_unknown=True,
                                                   bytes_mode="base64"))
        return with_note(result, edit_note(outcome))


def shown_args(tool_args: dict[str, Any], ctx: AgentContext[Any],
               tool: ToolsetTool[Any]) -> dict[str, Any]:
    """The arguments as the gate and a human see them: their JSON form, which must bring
    back exactly what the tool would receive. A field excluded from serialization, or a
    value with no faithful JSON form, is something nobody would see: the call is refused
    (``ToolFailed``), never judged on part of its arguments."""
    try:
        shown = to_jsonable_python(tool_args, serialize_unknown=True)
        same = tool.args_validator.validate_python(
            shown, context=ctx.validation_context) == tool_args
    except Exception:
        same = False
    if not same or not isinstance(shown, dict):
        raise ToolFailed(UNSEEN)
    return shown


def answer(outcome: Outcome) -> Any:
    """A decided request that does not run here: its stored result (it already ran), the
    approver's response, or a failed return saying why not."""
    if outcome.kind is OutcomeKind.EXECUTED:
        return with_note(outcome.result, edit_note(outcome))
    if outcome.kind is OutcomeKind.RESPONDED:
        return outcome.message or ""
    raise ToolFailed(not_run(outcome))


def bad_id(messages: list[ModelMessage], call_id: str | None) -> str | None:
    """Why ``call_id`` cannot be bound to a decision (missing, repeated in its model turn,
    used by an earlier turn), ``None`` when it can: the second line behind ``ids``, for a
    toolset used without the capability."""
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    for index in range(len(responses) - 1, -1, -1):
        ids = [c.tool_call_id for c in responses[index].tool_calls]
        if call_id in ids:
            repeated = {call_id} if ids.count(call_id) > 1 else set()
            return why_bad(call_id, repeated, used_ids(responses[:index]))
    return why_bad(call_id, set(), set()) or "an id no model turn made"
