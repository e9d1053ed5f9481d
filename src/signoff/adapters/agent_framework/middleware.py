"""``SignoffMiddleware``: the function middleware that sends every call to the gate.

The framework runs function middleware around each call of a model turn (concurrently),
and passes a bare ``function_approval_request`` result through untouched to drive its
approval flow (``FunctionInvocationContext.result``; ``agent_framework/_tools.py``
``_auto_invoke_function``): that is how an ask pauses. When the application answers the
request, the framework calls the middleware again for that call with the answer in
``context.metadata["approval_response"]``; the middleware proposes the same call again
(the gate finds its request by call id), reads the decision from the store and, approved,
claims it: the tool runs under that claim and its result is reported. A second claim of
the same request is refused by the gate, so a replayed wake-up never runs a call twice.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agent_framework import Content, FunctionInvocationContext, FunctionMiddleware
from pydantic import BaseModel

from signoff.adapters import proposing
from signoff.adapters.agent_framework import answers, child, runs
from signoff.adapters.agent_framework.resume import REQUEST_KEY
from signoff.canonical import args_hash
from signoff.errors import Conflict, NotFound
from signoff.kernel.execution import Execution, _current
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.kernel.protocol import GateProtocol
from signoff.model import ApprovalRequest, InteractionMode, ReviewMode, RunContext, ToolCall

AGENT = "agent-framework"
STATE_KEY = "signoff"  # session.state[STATE_KEY]: the run the session's calls belong to
CALLS_REMEMBERED = 10_000  # (thread, call id) → occurrence, to refuse a reused id
# The framework's mark of an approval request for changed arguments (its own, for
# middleware that changed them: ``_replacement_approval_request`` in ``_tools.py``).
REPLACEMENT = "_replacement_approval_request"

Next = Callable[[], Awaitable[None]]


class SignoffMiddleware(FunctionMiddleware):
    """``Agent(..., middleware=[SignoffMiddleware(gate)])``: allow / deny / ask per call.

    ``thread_id``: the signoff thread of calls made without a session (with one, its
    ``session_id``). ``review_mode`` / ``interaction_mode`` / ``principal``: the run's
    context, fixed when the session's first call starts its run. ``subagent_wait``: how
    long an ask of a subagent (an agent run inside a gated call) waits in place."""

    def __init__(self, gate: GateProtocol, *, principal: str | None = None,
                 interaction_mode: InteractionMode | str = InteractionMode.INTERACTIVE,
                 review_mode: ReviewMode | str | None = None,
                 thread_id: str | None = None, subagent_wait: float = 300.0) -> None:
        self.gate = gate
        self.principal = principal
        self.interaction_mode = InteractionMode(interaction_mode)
        self.review_mode = ReviewMode(review_mode) if review_mode is not None else None
        self.thread_id = thread_id
        self.subagent_wait = subagent_wait
        self._runs: dict[str | None, RunContext] = {}  # sessionless runs, by thread
        self._occurrences: dict[tuple[str | None, str], str] = {}
        self._starting = threading.Lock()
        # An in-process gate still under its default name proposes as this framework.
        if getattr(gate, "agent", None) == "agent":
            gate.agent = AGENT  # type: ignore[attr-defined]

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
        run = self._known_run(context, resumed)
        if run is None:
            run = await asyncio.to_thread(self._run, context, resumed)
        if not resumed and self._reused(run.thread_id, call_id, occurrence):
            context.result = answers.bad_call(
                "its call id was already used for another call of this run; call it again "
                "with a new id if it is still needed")
            return
        call = ToolCall(id=call_id, name=context.function.name, args=args,
                        description=context.function.description or None)
        try:
            proposal = await proposing.propose(self.gate, call, run)
        except Conflict as exc:
            if exc.code != "call_id_reused":
                raise
            named = await asyncio.to_thread(self._edited, context, call, args, run) \
                if resumed else None
            if named is None:
                context.result = answers.bad_call(exc.message)
                return
            request = named
        else:
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
        edited = args_hash(outcome.args) != args_hash(args)
        if edited and resumed:
            # An approver's edit: the framework runs an answered call only with the
            # arguments its approval request held, so the edited call goes back to it as
            # its own replacement request (nothing claimed yet); the next wake-up runs it.
            context.result = _pause(context, call_id, occurrence, outcome.args, request,
                                    edit=outcome.reason or "a reviewer changed the arguments")
            return
        claimed = await asyncio.to_thread(self.gate.claim, request.id)
        if isinstance(claimed, Outcome):  # claimed before (a replay) or no longer valid
            context.result = answers.from_outcome(claimed)
            return
        if edited:  # not a resume (a subagent's wait): no framework approval binds the call
            context.arguments = dict(claimed.args)
        await self._run_claimed(context, call_next, claimed, call_id, run)

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

    def _edited(self, context: FunctionInvocationContext, call: ToolCall,
                args: Mapping[str, Any], run: RunContext) -> ApprovalRequest | None:
        """The approved request whose edit this resumed call carries: the request the
        answer names, of this call id and thread, approved with exactly these arguments.
        Anything else is ``None`` (the call is refused)."""
        answer = context.metadata.get("approval_response")
        named = getattr(answer, "additional_properties", None) or {}
        request_id = named.get(REQUEST_KEY)
        if not isinstance(request_id, str):
            return None
        try:
            request = self.gate.get_request(request_id)
        except NotFound:
            return None
        if request.call_id != call.id or request.thread_id != run.thread_id \
                or request.tool != call.name \
                or args_hash(json.loads(request.run_args)) != args_hash(args):
            return None
        return request

    def _known_run(self, context: FunctionInvocationContext, resumed: bool
                   ) -> RunContext | None:
        """The call's run when nothing need be read or written for it (a subagent's, or a
        run already started and not being resumed), found on the event loop; ``None``:
        ``_run`` in a worker thread. Most calls of a run take this way, and a thread hop
        would cost more than the rest of the call's judging."""
        inside = child.child_run()
        if inside is not None:
            return inside
        if resumed:  # a mode chosen meanwhile may have to be fixed again (``runs``)
            return None
        session = context.session
        if session is None:
            return self._runs.get(self.thread_id)
        return _kept(session.state.get(STATE_KEY), session.session_id)

    def _run(self, context: FunctionInvocationContext, resumed: bool) -> RunContext:
        """The run of the call's session: started (its review mode fixed) at the session's
        first call and kept in ``session.state``, so a resume in a new process finds it;
        at a resume, its mode fixed again if one was chosen for it meanwhile (``runs``).
        Inside another gated call (a subagent), the parent's run (``child``)."""
        inside = child.child_run()
        if inside is not None:
            return inside
        with self._starting:  # a turn's calls run at once: one run starts, not one each
            return self._session_run(context, resumed)

    def _session_run(self, context: FunctionInvocationContext, resumed: bool) -> RunContext:
        session = context.session
        if session is None:
            run = self._runs.get(self.thread_id)
            if run is None:
                run = self._runs[self.thread_id] = self._start(self.thread_id)
            return run
        kept = session.state.get(STATE_KEY)
        run = _kept(kept, session.session_id)
        if run is not None:
            assert isinstance(kept, Mapping)
            again = runs.refixed(self.gate, run, kept) if resumed else None
            if again is None:
                return run
            run, session.state[STATE_KEY] = again
            return run
        run = self._start(session.session_id)
        session.state[STATE_KEY] = runs.entry(
            run, mode_from="explicit" if self.review_mode is not None else "thread")
        return run

    def _start(self, thread: str | None) -> RunContext:
        return self.gate.start_run(RunContext(
            thread_id=thread, run_id="run_" + uuid.uuid4().hex, review_mode=self.review_mode,
            interaction_mode=self.interaction_mode, principal=self.principal))

    def _reused(self, thread: str | None, call_id: str, occurrence: Any) -> bool:
        """A call id another call of this thread already carried (the framework gives each
        call its own occurrence id): the second one is refused, never run."""
        key = (thread, call_id)
        seen = self._occurrences.get(key)
        mine = str(occurrence) if occurrence is not None else f"none:{uuid.uuid4().hex}"
        if seen is not None:
            return seen != mine
        self._occurrences[key] = mine
        while len(self._occurrences) > CALLS_REMEMBERED:
            self._occurrences.pop(next(iter(self._occurrences)))
        return False


def _kept(kept: Any, session_id: str) -> RunContext | None:
    """The run a session's state holds, if it holds one."""
    if isinstance(kept, Mapping) and kept.get("run_id"):
        return runs.run_of(kept, session_id)
    return None


def _pause(context: FunctionInvocationContext, call_id: str, occurrence: Any,
           args: Mapping[str, Any], request: ApprovalRequest, *,
           edit: str | None = None) -> Content:
    """The framework's approval request for this call, carrying signoff's request id. For
    an approver's edit, the framework's replacement request: the call with the edited
    arguments, which the framework binds the next answer to and hands back to run."""
    call = Content.from_function_call(call_id=call_id, name=context.function.name,
                                      arguments=dict(args),
                                      id=str(occurrence) if occurrence is not None else None)
    properties: dict[str, Any] = {REQUEST_KEY: request.id, "risk": request.risk.value,
                                  "summary": request.summary}
    if edit is not None:
        properties.update({REPLACEMENT: True, "reason": edit, "signoff_edited": True})
    return Content.from_function_approval_request(
        id=call.id or call_id, function_call=call, additional_properties=properties)


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
