"""``CallGate``: the function middleware half of ``SignoffMiddleware``, which sends every
call to the gate.

The framework runs function middleware around each call of a model turn (concurrently),
and passes a bare ``function_approval_request`` result through untouched to drive its
approval flow (``FunctionInvocationContext.result``; ``agent_framework/_tools.py``
``_auto_invoke_function``): that is how an ask pauses. When the application answers the
request, the framework calls the middleware again for that call with the answer in
``context.metadata["approval_response"]``; the middleware proposes the same call again
(the gate finds its request by call id), reads the decision from the store and, approved,
claims it: the tool runs under that claim and its result is reported. A second claim of
the same request is refused by the gate, so a replayed wake-up never runs a call twice.

An approver's edit runs at that same wake-up. The framework binds its approval to the
arguments its approval request showed and refuses a call whose arguments middleware
changed (``FunctionTool._ensure_approved_arguments_unchanged``). That approval is only
signoff's wake-up, and the gate's claim binds the edited arguments, so the edited call is
run by its tool through a context of its own and the call the framework approved is left
as it was; its result carries the editor's reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agent_framework import Content, FunctionInvocationContext, FunctionMiddleware
from pydantic import BaseModel

from signoff.adapters import proposing, telling
from signoff.adapters.agent_framework import answers, child
from signoff.adapters.agent_framework.ids import CallIds
from signoff.adapters.agent_framework.resume import REQUEST_KEY
from signoff.adapters.agent_framework.runs import Runs
from signoff.canonical import args_hash
from signoff.errors import Conflict
from signoff.kernel.execution import Execution, _current
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.kernel.protocol import GateProtocol
from signoff.model import ApprovalRequest, RunContext, ToolCall

Next = Callable[[], Awaitable[None]]


class CallGate(FunctionMiddleware):
    """Allow / deny / ask per call. ``subagent_wait``: how long an ask of a subagent (an
    agent run inside a gated call) waits in place."""

    def __init__(self, gate: GateProtocol, runs: Runs, ids: CallIds, *,
                 subagent_wait: float = 300.0) -> None:
        self.gate = gate
        self.runs = runs
        self.ids = ids
        self.subagent_wait = subagent_wait

    async def process(self, context: FunctionInvocationContext, call_next: Next) -> None:
        call_id = context.metadata.get("call_id")
        occurrence = context.metadata.get("function_call_occurrence_id")
        if not isinstance(call_id, str) or not call_id:
            context.result = answers.bad_call("it has no call id")
            return
        try:
            args = _arguments(context.arguments)
        except (TypeError, ValueError) as exc:
            context.result = answers.bad_call(f"its arguments do not read ({exc})")
            return
        resumed = context.metadata.get("approval_response") is not None
        run = self.runs.known(context.session, resumed=resumed)
        if run is None:
            run = await asyncio.to_thread(self.runs.of, context.session, resumed=resumed)
        if not resumed:
            why = self.ids.unbindable(run.thread_id, call_id)
            if why is None and self.ids.reused(run.thread_id, call_id, occurrence):
                why = "carried by another call of this run"
            if why is not None:
                context.result = answers.bad_call(
                    f"its call id was {why}; call it again with a new id if it is still "
                    "needed")
                return
        call = ToolCall(id=call_id, name=context.function.name, args=args,
                        description=context.function.description or None)
        try:
            proposal = await proposing.propose(self.gate, call, run)
        except Conflict as exc:
            if exc.code != "call_id_reused":
                raise
            context.result = answers.bad_call(exc.message)
            return
        if proposal.kind is ProposalKind.ALLOWED:
            with child.running(call_id, run):
                await call_next()
            return
        if proposal.kind in (ProposalKind.DENIED, ProposalKind.BLOCKED):
            context.result = answers.refused(proposal.verdict)
            return
        assert proposal.request is not None
        request = proposal.request
        outcome = await asyncio.to_thread(self.gate.outcome, request.id)
        if outcome.kind is OutcomeKind.PENDING and run.parent_call and not resumed:
            outcome = await asyncio.to_thread(self._wait_in_place, request.id, run)
        if outcome.kind is OutcomeKind.PENDING:
            context.result = _pause(context, call_id, occurrence, args, request)
            return
        if outcome.kind is not OutcomeKind.APPROVED:
            context.result = answers.from_outcome(outcome)
            return
        claimed = await asyncio.to_thread(self.gate.claim, request.id)
        if isinstance(claimed, Outcome):  # claimed before (a replay) or no longer valid
            context.result = answers.from_outcome(claimed)
            return
        edit = outcome.reason if outcome.code == "edited" else None
        if args_hash(claimed.args) == args_hash(args):
            await self._run_claimed(context, call_next, claimed, call_id, run)
            return
        runner = _edited_runner(context, claimed.args, call_id)
        await self._run_claimed(context, runner, claimed, call_id, run)
        context.result = _with_note(context.result, telling.edited(edit))

    async def _run_claimed(self, context: FunctionInvocationContext, call_next: Next,
                           execution: Execution, call_id: str, run: RunContext) -> None:
        """Run exactly the approved call under its claim, then report what it did."""
        token = _current.set(execution)
        try:
            with child.running(call_id, run):
                await call_next()
        except Exception as exc:
            await asyncio.to_thread(self.gate.report, execution,
                                    error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            _current.reset(token)
        await asyncio.to_thread(self.gate.report, execution, result=_result(context.result))

    def _wait_in_place(self, request_id: str, run: RunContext) -> Outcome:
        """A subagent's ask: nobody resumes a child run, so it waits for the decision here,
        at most ``subagent_wait`` seconds; then the request is withdrawn (not run)."""
        outcome = self.gate.wait(request_id, timeout=self.subagent_wait)
        if outcome.kind is OutcomeKind.PENDING:
            return self.gate.cancel(request_id, actor=run.principal, reason=(
                f"the subagent's wait of {self.subagent_wait:g}s ran out"))
        return outcome


def _pause(context: FunctionInvocationContext, call_id: str, occurrence: Any,
           args: Mapping[str, Any], request: ApprovalRequest) -> Content:
    """The framework's approval request for this call, carrying signoff's request id."""
    call = Content.from_function_call(call_id=call_id, name=context.function.name,
                                      arguments=dict(args),
                                      id=str(occurrence) if occurrence is not None else None)
    properties: dict[str, Any] = {REQUEST_KEY: request.id, "risk": request.risk.value,
                                  "summary": request.summary}
    return Content.from_function_approval_request(
        id=call.id or call_id, function_call=call, additional_properties=properties)


def _edited_runner(context: FunctionInvocationContext, args: Mapping[str, Any],
                   call_id: str) -> Next:
    """Run the tool with an approver's edited arguments, through a context of its own (the
    session and runtime arguments of the call), and leave its result on ``context``."""
    async def run() -> None:
        own = FunctionInvocationContext(function=context.function, arguments=dict(args),
                                        session=context.session, kwargs=context.kwargs)
        context.result = await context.function.invoke(arguments=dict(args), context=own,
                                                        tool_call_id=call_id)
    return run


def _with_note(result: Any, note: str) -> Any:
    """``result`` with signoff's ``note`` after it, as the model reads it."""
    text = f"{answers.NOTE} {note}"
    if isinstance(result, list) and all(isinstance(c, Content) for c in result):
        return [*result, Content.from_text(text)]
    return f"{result}\n{text}" if result is not None else text


def _arguments(arguments: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(arguments, BaseModel):
        return arguments.model_dump(mode="json")
    if isinstance(arguments, Mapping):
        return dict(arguments)
    raise TypeError(f"arguments of type {type(arguments).__name__}")


def _result(result: Any) -> Any:
    """What the tool returned, as the store keeps it (JSON): a list of contents as their
    text, anything else as it is or its text."""
    if isinstance(result, list) and all(isinstance(c, Content) for c in result):
        texts = [c.text for c in result if c.type == "text" and c.text is not None]
        if len(texts) == len(result):
            return "\n".join(texts)
        return [c.to_dict() for c in result]
    if isinstance(result, Content):
        return result.to_dict()
    if result is None or isinstance(result, (str, int, float, bool, list, dict)):
        return result
    return str(result)
