"""One function tool gated: the SDK's ``needs_approval`` answered by the policy, and its
``on_invoke_tool`` run only as the gate says.

``needs_approval`` proposes the call: allowed → ``False`` (it runs); an ask → ``True`` (the
SDK pauses the run with a ``ToolApprovalItem``); denied, blocked or not judgeable →
``False`` too, and the invoker answers with the refusal as the tool's output, so the model
reads it and the run goes on. The invoker never trusts the run state's approval on its
own: for an asked call it claims the request (``gate.claim``, a compare-and-set) and runs
exactly the approved arguments — an approver's edit included — once; a second claim (a
replayed resume) is an outcome, answered without running anything. A call made inside
another gated call (an agent used as a tool) is labelled with it (``parent_call``) and its
ask waits in place instead of pausing.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import logging
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from agents import FunctionTool, RunContextWrapper
from agents.tool import maybe_invoke_function_tool_failure_error_function
from agents.tool_context import ToolContext

from signoff.adapters import proposing
from signoff.adapters.openai_agents import texts
from signoff.adapters.openai_agents.scope import PARENT_CALL, Scope
from signoff.canonical import parse_args
from signoff.errors import SignoffError
from signoff.kernel.execution import Execution, _current
from signoff.kernel.outcomes import Outcome, OutcomeKind, Proposal, ProposalKind
from signoff.model import ReviewMode, RunContext, ToolCall
from signoff.policy.modes import clamp

log = logging.getLogger("signoff.adapters.openai_agents")
REMEMBERED = 4096  # verdicts kept from needs_approval for the invoker that follows
ASKED = (ProposalKind.PENDING, ProposalKind.DECIDED)


class GatedTool:
    """The ``needs_approval`` and ``on_invoke_tool`` of one gated ``FunctionTool``."""

    def __init__(self, tool: FunctionTool, scope: Scope) -> None:
        self.name = tool.name
        self.function_tool = tool
        self.original = tool.on_invoke_tool
        self.scope = scope
        # (thread, call id) → what needs_approval found: a proposal, or a refusal's text
        self._found: OrderedDict[tuple[str | None, str], Proposal | str] = OrderedDict()

    def tool(self, tool: FunctionTool) -> FunctionTool:
        """A copy of ``tool`` whose approval and invocation are this gate's; the policy's
        clarification tool is offered only to runs someone would answer."""
        gated = copy.copy(tool)
        gated.on_invoke_tool = self
        gated.needs_approval = self.needs_approval
        if tool.name == self.scope.gate.config.clarification_tool:
            gated.is_enabled = self.offered
        return gated

    async def offered(self, wrapper: RunContextWrapper[Any], agent: Any) -> bool:
        """The SDK's ``is_enabled`` for the clarification tool: withdrawn in full review mode
        (the thread's, or the application's, under the policy's ceiling) and in unattended
        runs, where no one will answer — a forced call is still refused by the policy."""
        own = self.function_tool.is_enabled
        if callable(own):
            enabled = own(wrapper, agent)
            if inspect.isawaitable(enabled):
                enabled = await enabled
            if not enabled:
                return False
        elif not own:
            return False
        context = self.scope.context(wrapper.context)
        if context.interaction_mode.unattended:
            return False
        if context.thread_id:
            context = await asyncio.to_thread(self.scope.gate.context_for, context)
        mode = clamp(context.review_mode or self.scope.gate.config.default_review_mode,
                     self.scope.gate.config.ceiling)
        return mode is not ReviewMode.FULL

    # ---- judging -------------------------------------------------------------------------

    async def propose(self, call_id: str, args: Any, context: RunContext) -> Proposal | str:
        """The gate's proposal, or the text of a refusal when the call cannot be judged."""
        if not context.thread_id:
            return texts.NO_THREAD
        call = ToolCall(id=call_id, name=self.name, args=args)
        try:
            return await proposing.propose(self.scope.gate, call, context)
        except SignoffError as exc:  # a reused call id, arguments that do not read, …
            return f"{texts.NOTE} The call was not run ({exc.code}): {exc}"

    async def request_of(self, call_id: str, context: RunContext) -> str | None:
        """The request this call already has on its thread: a paused call is answered by
        its request, never judged afresh (a mode changed since would not free it)."""
        if not context.thread_id:
            return None
        requests = await asyncio.to_thread(self.scope.gate.thread_requests, context.thread_id)
        return next((r.id for r in requests if r.call_id == call_id and r.tool == self.name),
                    None)

    async def needs_approval(self, wrapper: RunContextWrapper[Any], params: dict[str, Any],
                             call_id: str) -> bool:
        """The SDK's question for this call: only an ask pauses the run."""
        context = self.scope.context(wrapper.context)
        found = await self.propose(call_id, params, context)
        if context.parent_call and isinstance(found, Proposal) and found.kind in ASKED:
            await self._wait_in_place(found, context)
            found = replace(found, kind=ProposalKind.DECIDED)
        self._found[(context.thread_id, call_id)] = found
        while len(self._found) > REMEMBERED:
            self._found.popitem(last=False)
        return isinstance(found, Proposal) and found.kind in ASKED and not context.parent_call

    async def _wait_in_place(self, found: Proposal, context: RunContext) -> None:
        """An ask inside another gated call (an agent used as a tool) cannot pause the outer
        run — the SDK would answer the outer call before the inner one ran — so it waits
        here for ``subagent_wait`` seconds; then the request is withdrawn. The invoker's
        claim says what runs: an approval runs, anything else is told to the model."""
        assert found.request_id is not None
        gate, wait = self.scope.gate, self.scope.subagent_wait
        outcome = await asyncio.to_thread(gate.wait, found.request_id, timeout=wait)
        if outcome.kind is OutcomeKind.PENDING:
            await asyncio.to_thread(gate.cancel, found.request_id, actor=context.principal,
                                    reason=f"the subagent's wait of {wait:g}s ran out")

    # ---- running -------------------------------------------------------------------------

    async def __call__(self, ctx: ToolContext[Any], raw: str) -> Any:
        """Run the call as the gate says (the SDK's ``on_invoke_tool``)."""
        call_id = ctx.tool_call_id
        context = self.scope.context(ctx.context)
        found = self._found.pop((context.thread_id, call_id), None)
        if found is None:  # a resumed run (maybe in a new process): its request, if any
            request_id = await self.request_of(call_id, context)
            if request_id is not None:
                return await self._claimed(ctx, raw, call_id, request_id, context)
            found = await self.propose(call_id, raw, context)
        if isinstance(found, str):
            return found
        if found.kind is ProposalKind.ALLOWED:
            return await self._run(ctx, raw, call_id)
        if found.kind not in ASKED or found.request_id is None:
            return texts.refused(found.verdict)
        return await self._claimed(ctx, raw, call_id, found.request_id, context)

    async def _claimed(self, ctx: ToolContext[Any], raw: str, call_id: str,
                       request_id: str, context: RunContext) -> Any:
        """An asked call: the decision read from the store, the approved arguments run once."""
        gate = self.scope.gate
        claimed = await asyncio.to_thread(gate.claim, request_id)
        if isinstance(claimed, Outcome):
            if claimed.kind is OutcomeKind.PENDING:  # the run state approved it, people did not
                log.warning("signoff: call %s was approved in the run state while its request "
                            "%s waits; it was not run and the request is withdrawn",
                            call_id, request_id)
                await asyncio.to_thread(
                    gate.cancel, request_id, actor=context.principal,
                    reason="approved in the agent's run state, not in signoff; the run went "
                           "on without it")
                return texts.OUTSIDE
            return texts.of_outcome(claimed)
        note = await self._edit_note(raw, claimed)
        # The function itself, under the SDK's failure handling: a call that raised is
        # reported as failed, then answered the way the tool's failure handler says.
        invoke = getattr(self.original, "_invoke_tool_impl", self.original)
        try:
            result = await self._run(ctx, json.dumps(claimed.args), call_id, claimed, invoke)
        except Exception as exc:
            await asyncio.to_thread(gate.report, claimed, error=f"{type(exc).__name__}: {exc}")
            said = await maybe_invoke_function_tool_failure_error_function(
                function_tool=self.function_tool, context=ctx, error=exc)
            return said if said is not None else f"{texts.NOTE} The call failed: {exc}"
        await asyncio.to_thread(gate.report, claimed, result=_jsonable(result))
        if note is None:
            return result
        text = result if isinstance(result, str) else texts.result_text(_jsonable(result))
        return texts.with_note(text, note)

    async def _edit_note(self, raw: str, execution: Execution) -> str | None:
        """What the model is told when an approver changed the arguments it proposed."""
        try:
            proposed = parse_args(raw)
        except SignoffError:
            proposed = None
        if proposed == execution.args:
            return None
        request = await asyncio.to_thread(self.scope.gate.get_request, execution.request_id)
        note = texts.edit_note(request.outcome_reason)
        return f"{note}. It ran with {json.dumps(execution.args, ensure_ascii=False)}."

    async def _run(self, ctx: ToolContext[Any], raw: str, call_id: str,
                   execution: Execution | None = None, invoke: Any = None) -> Any:
        """The tool itself; a gated call made inside it (an agent as a tool) is its child."""
        parent = PARENT_CALL.set((call_id, self.scope.context(ctx.context)))
        running = _current.set(execution) if execution is not None else None
        try:
            return await (invoke or self.original)(ctx, raw)
        finally:
            if running is not None:
                _current.reset(running)
            PARENT_CALL.reset(parent)


def _jsonable(value: Any) -> Any:
    """A tool's result as the store keeps it: JSON, or its text."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value
