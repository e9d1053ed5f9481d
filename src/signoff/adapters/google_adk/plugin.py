"""``SignoffPlugin``: every tool call of an ADK app judged by signoff, through ADK's own
tool confirmation.

A plugin's ``before_tool_callback`` runs for every tool call of every agent the ``Runner``
runs, before the tool; whatever it returns answers the call instead of the tool. So:

* allowed → ``None``: ADK runs the call as the model made it;
* denied or blocked → a dict with the verdict's message: the model reads it, the run goes on;
* ask → ``tool_context.request_confirmation(payload={"signoff": {"request_id": …}})`` and a
  placeholder answer, marked to skip summarization: ADK emits its ``adk_request_confirmation``
  call and the invocation ends (the pause). The session service stores it all.
* resume → the user message answering the confirmation (``resume_message``) is only a
  wake-up: ADK calls the tool again with ``tool_context.tool_confirmation`` set, the plugin
  proposes the same call id again (the gate finds its request) and reads the decision from
  the store. Approved → ``gate.claim`` → the plugin runs the tool itself with exactly the
  claimed arguments (an approver's edit included) → ``gate.report``; rejected, expired,
  cancelled, invalidated → the model is told; a claim that loses (a replayed resume, a
  second process) runs nothing.

``before_model_callback`` withdraws the clarification tool (the policy's
``clarification_tool``) from what the model is offered when nobody would answer it — full
review mode, an unattended run — and adds a note saying so to the system instruction; the
tool stays callable, so a call the model makes anyway reaches the gate, which refuses it.

A run started inside a gated call (an ``AgentTool``: ``child``) is that call's subagent:
its calls are labelled with the parent call, and its asks wait in place for at most
``subagent_wait`` seconds — ADK cannot resume a nested run — then are withdrawn.

``before_run_callback`` ends a run at once (ADK's early exit, a message starting
``[signoff] thread_waiting``) while the session has a pause whose request is still
undecided, or when the message does not answer every outstanding pause together: the asks
of one turn pause, and resume, together.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.events.event import Event
from google.adk.flows.llm_flows.functions import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from signoff.adapters import proposing
from signoff.adapters.google_adk import child, replies
from signoff.adapters.google_adk.confirmations import PAYLOAD_KEY, answered_in, pauses
from signoff.adapters.telling import FULL_MODE_NOTE
from signoff.errors import Conflict, SignoffError
from signoff.kernel.execution import Execution, _current
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.kernel.protocol import GateProtocol
from signoff.model import ApprovalRequest, InteractionMode, ReviewMode, RunContext, ToolCall
from signoff.policy.modes import clamp

HINT = ("signoff request {id}: {summary}. Decide it in signoff (the inbox, the API, or "
        "`signoff requests approve|reject {id}`); answering this confirmation only wakes "
        "the run, which then reads the decision from signoff.")

# What a refused run says (the text of ADK's early-exit event), each with its stable code.
WAITING = ("[signoff] thread_waiting: this session waits for {n} decision(s) ({ids}); it "
           "resumes once they are decided.")
UNANSWERED = ("[signoff] thread_waiting: this session is paused on {n} call(s), all decided: "
              "resume them together with signoff.adapters.google_adk.resume_message(session).")


def _waiting(words: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=words)])


class SignoffPlugin(BasePlugin):
    """``App(plugins=[SignoffPlugin(gate)])``: the one line an ADK app adds.

    ``interaction_mode`` and ``principal`` are the run's, set by trusted code (never by the
    model): an unattended run's asks are blocked, not paused. The thread is the ADK session
    (``session.id``), the run the invocation. ``subagent_wait``: how long a subagent's ask
    waits in place for a decision before it is withdrawn."""

    def __init__(self, gate: GateProtocol, *,
                 interaction_mode: InteractionMode | str = InteractionMode.INTERACTIVE,
                 principal: str | None = None, subagent_wait: float = 300.0,
                 name: str = "signoff") -> None:
        super().__init__(name=name)
        self.subagent_wait = subagent_wait
        self.gate = gate
        self.interaction_mode = InteractionMode(interaction_mode)
        self.principal = principal

    # ---- the run ------------------------------------------------------------------------

    async def before_run_callback(
            self, *, invocation_context: InvocationContext) -> types.Content | None:
        """Refuse new input, or a resume, while the session's pauses cannot all go on: the
        run ends at once with a message saying why (ADK's early exit; nothing is consumed,
        so the resume still works once the decisions are made)."""
        waiting = pauses(invocation_context.session.events)
        if not waiting:
            return None
        undecided = []
        for pause in waiting:
            outcome = await asyncio.to_thread(self.gate.outcome, pause.request_id)
            if outcome.kind is OutcomeKind.PENDING:
                undecided.append(pause.request_id)
        if undecided:
            return _waiting(WAITING.format(n=len(undecided), ids=", ".join(undecided)))
        # The message this run was started with is the session's last user event: ADK
        # resumes a paused invocation under its first message (``user_content``).
        events = invocation_context.session.events
        latest = next((e.content for e in reversed(events) if e.author == "user"), None)
        missing = {p.confirmation_id for p in waiting} - answered_in(latest)
        if missing:
            return _waiting(UNANSWERED.format(n=len(waiting)))
        return None

    # ---- the model call -----------------------------------------------------------------

    async def before_model_callback(self, *, callback_context: ReadonlyContext,
                                    llm_request: LlmRequest) -> LlmResponse | None:
        """Withdraw the clarification tool where no one would answer it (its declaration
        only: a call the model makes anyway still reaches the gate, which refuses it)."""
        name = self.gate.config.clarification_tool
        if not name or not _declares(llm_request, name):
            return None
        run = self._run(callback_context)
        if await self._no_human(run):
            _withdraw(llm_request, name)
            llm_request.append_instructions([FULL_MODE_NOTE])
        return None

    async def _no_human(self, run: RunContext) -> bool:
        """Full review mode (the thread's, as the policy's ceiling lets it be) or an
        unattended run: nobody will answer a clarifying question."""
        if run.interaction_mode is not InteractionMode.INTERACTIVE:
            return True
        if run.review_mode is None:
            run = await asyncio.to_thread(self.gate.context_for, run)
        config = self.gate.config
        mode = clamp(run.review_mode or config.default_review_mode, config.ceiling)
        return mode is ReviewMode.FULL

    def _run(self, context: ReadonlyContext) -> RunContext:
        """The run a model or tool call belongs to: the session's thread and the
        invocation, with the trusted facts given to the plugin — or, inside a gated call,
        its parent's (``child``)."""
        own = RunContext(thread_id=context.session.id, run_id=context.invocation_id,
                         interaction_mode=self.interaction_mode, principal=self.principal)
        held = child.parent(context.invocation_id)
        return own if held is None else child.inherited(own, held)

    # ---- the tool call ------------------------------------------------------------------

    async def before_tool_callback(self, *, tool: BaseTool, tool_args: dict[str, Any],
                                   tool_context: ToolContext) -> dict[str, Any] | None:
        if type(tool) is BaseTool:  # a name the model made up: ADK's stand-in, which cannot
            return None  # run; ADK answers it with its "no tool with that name" error
        call_id = tool_context.function_call_id
        bad = _bad_id(call_id, tool_context.session.events)
        if bad is not None:
            return replies.refused_id(call_id, *bad)
        assert call_id is not None  # a missing id is refused above
        context = self._run(tool_context)
        call = ToolCall(id=call_id, name=tool.name, args=dict(tool_args))
        try:
            proposal = await proposing.propose(self.gate, call, context)
        except Conflict as exc:
            if exc.code != "call_id_reused":
                raise
            return replies.refused_id(call_id, "an id this session already used for another "
                                      "call", "call_id_reused")
        except SignoffError as exc:  # what the gate cannot judge does not run
            return {"error": f"{replies.NOTE} signoff could not judge this call ({exc.code}): "
                             f"{exc}; it did not run.", "signoff": {"code": exc.code}}
        if proposal.kind is ProposalKind.ALLOWED:
            child.hold(call_id, context)  # ADK runs it next, in this task
            return None
        if proposal.kind in (ProposalKind.DENIED, ProposalKind.BLOCKED):
            return replies.refused(proposal.verdict)
        request = proposal.request
        assert request is not None
        if proposal.kind is ProposalKind.PENDING:
            if context.parent_call:
                return await self._wait_in_place(tool, tool_context, request, context)
            if tool_context.tool_confirmation is None:
                return _pause(request, tool_context)
            # Woken before a decision (the run guard was not in the way): the pause ADK
            # answered is spent, so the request is withdrawn and the model told.
            withdrawn = await asyncio.to_thread(
                self.gate.cancel, request.id, actor=self.principal,
                reason="the run was resumed before the call was decided")
            return replies.from_outcome(withdrawn)
        return await self._resume(tool, tool_context, request.id, context)

    async def after_tool_callback(self, *, tool: BaseTool, tool_args: dict[str, Any],
                                  tool_context: ToolContext,
                                  result: dict[str, Any]) -> dict[str, Any] | None:
        child.release(tool_context.function_call_id, tool_context.invocation_id)
        return None

    async def on_tool_error_callback(self, *, tool: BaseTool, tool_args: dict[str, Any],
                                     tool_context: ToolContext,
                                     error: Exception) -> dict[str, Any] | None:
        child.release(tool_context.function_call_id, tool_context.invocation_id)
        return None

    async def _wait_in_place(self, tool: BaseTool, tool_context: ToolContext,
                             request: ApprovalRequest, context: RunContext) -> dict[str, Any]:
        """A subagent's ask: ADK cannot resume a nested run, so it waits here for a
        decision, and is withdrawn (the call fails closed) once ``subagent_wait`` ran out."""
        outcome = await asyncio.to_thread(self.gate.wait, request.id,
                                          timeout=self.subagent_wait)
        if outcome.kind is OutcomeKind.PENDING:
            withdrawn = await asyncio.to_thread(
                self.gate.cancel, request.id, actor=context.principal,
                reason=f"the subagent's wait of {self.subagent_wait:g}s ran out")
            return replies.from_outcome(withdrawn)
        return await self._resume(tool, tool_context, request.id, context)

    async def _resume(self, tool: BaseTool, tool_context: ToolContext,
                      request_id: str, context: RunContext) -> dict[str, Any]:
        """A decided request: run exactly what was approved, once, or say why not."""
        outcome = await asyncio.to_thread(self.gate.outcome, request_id)
        if outcome.kind is not OutcomeKind.APPROVED:
            return replies.from_outcome(outcome)
        claimed = await asyncio.to_thread(self.gate.claim, request_id)
        if isinstance(claimed, Outcome):  # lost the compare-and-set: run nothing
            return replies.from_outcome(claimed)
        return await self._run_claimed(tool, tool_context, claimed, outcome, context)

    async def _run_claimed(self, tool: BaseTool, tool_context: ToolContext,
                           execution: Execution, outcome: Outcome,
                           context: RunContext) -> dict[str, Any]:
        args = dict(execution.args)
        token = _current.set(execution)
        try:
            with child.running(tool_context.function_call_id or "", context):
                value = await tool.run_async(args=args, tool_context=tool_context)
        except Exception as exc:  # the tool raised: recorded, and the model told
            await asyncio.to_thread(self.gate.report, execution,
                                    error=f"{type(exc).__name__}: {exc}")
            return replies.failed(exc)
        finally:
            _current.reset(token)
        await asyncio.to_thread(self.gate.report, execution, result=_jsonable(value))
        return replies.result(value, replies.edit_note(outcome, args))


def _pause(request: ApprovalRequest, tool_context: ToolContext) -> dict[str, Any]:
    """Ask through ADK: the confirmation carries the request, the run ends here."""
    tool_context.request_confirmation(
        hint=HINT.format(id=request.id, summary=request.summary),
        payload={PAYLOAD_KEY: {"request_id": request.id, "tool": request.tool,
                               "args": json.loads(request.run_args),
                               "args_hash": request.run_hash, "risk": request.risk.value}})
    # Not a result to summarize: without this ADK calls the model again at once.
    tool_context.actions.skip_summarization = True
    return replies.pending(request)


def _declares(llm_request: LlmRequest, name: str) -> bool:
    return any(d.name == name for t in llm_request.config.tools or []
               if isinstance(t, types.Tool) for d in t.function_declarations or [])


def _withdraw(llm_request: LlmRequest, name: str) -> None:
    """``name``'s declaration taken out of what the model is offered (``tools_dict`` keeps
    the tool, so a call to it is still answered by the gate, not by ADK's "no such tool")."""
    for offered in llm_request.config.tools or []:
        if isinstance(offered, types.Tool) and offered.function_declarations:
            offered.function_declarations = [d for d in offered.function_declarations
                                             if d.name != name]


def _bad_id(call_id: str | None, events: list[Event]) -> tuple[str, str] | None:
    """A call id that cannot stand for one call: missing, or made twice in the session (in
    one turn or across turns). Such a call is never bound to a decision."""
    if not call_id or not call_id.strip():
        return "no id", "missing_call_id"
    made = Counter(call.id for event in events if event.author != "user"
                   for call in event.get_function_calls()
                   if call.name != REQUEST_CONFIRMATION_FUNCTION_CALL_NAME)
    if made[call_id] > 1:
        return "a repeated id", "duplicate_call_id"
    return None


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


__all__ = ["SignoffPlugin"]
