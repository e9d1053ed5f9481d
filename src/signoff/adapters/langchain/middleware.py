"""``SignoffMiddleware``: signoff's gate inside LangChain v1 agents (``create_agent``).

Two hooks, neither a graph step of its own:

* ``wrap_model_call`` starts a run on its first model call (refusing new input
  while the thread waits on decisions, fixing the run's review mode in the
  graph state), withdraws the clarification tool in full mode and unattended
  runs, and drops tool calls whose ids are missing or repeated.
* ``wrap_tool_call`` sends every tool call through ``Gate.propose``. Allowed
  calls run; denied and blocked ones come back as error ToolMessages the model
  can act on; an ask pauses the run with a LangGraph interrupt that carries the
  request id and LangChain's HITL shapes (``hitl``). LangChain runs each
  tool call of a turn as its own task, so the asks of one turn pause the run
  once, together, and calls that were free to run are not run again on resume.

A resume value is only a wake-up — unless the middleware was built with
``resume_decisions_as=<user>``: then a decision it carries in LangChain's HITL
shape is first taken as that user's, through the gate's rules, for this
interrupt's request only (``Gate.decide_once``). Either way the decision is
read from the store, a request still undecided pauses again, and an approved call runs
through the gate's claim — at most once, however often LangGraph re-runs the
node. An edit reaches the tool, rewrites the proposing AIMessage and adds the
editor's reason to the tool's message; a
rejection is an error ToolMessage with the reason and alternatives.

A subagent — an agent whose run starts inside a gated tool call (``child``), or
one given ``SignoffContext(parent_call=…)`` — cannot pause its parent's graph: its
asks wait in place for at most ``subagent_wait`` seconds, then the request is
withdrawn and the call fails closed. A call to a tool the policy marks as starting
subagents (``[tools.task] subagent = "subagent_type"``) is refused unless the named
subagent runs with signoff too (``gated_subagents``; deepagents: ``gate_subagents``).

deepagents' file tools carry their backend: at every model call (the tools offered) and
tool call, the backend of each is checked against the policy's path reading
(``signoff.adapters.deepagents.check_backend``), so an agent whose backend reads paths
otherwise than the policy fails with ``PolicyError(backend_mismatch)`` before any of its
tools runs — whether or not the application checked it. Over a backend that reads real
paths, a file call naming a relative path (deepagents reads it from ``/``) is refused
(``relative_path``), before the policy is asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.agents.middleware.types import (
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from signoff.adapters.langchain import child
from signoff.adapters.langchain.messages import (
    edit_note,
    from_outcome,
    refused,
    reused_id,
    strip_bad_ids,
    tool_message,
    with_note,
)
from signoff.adapters.langchain.pausing import Pauses
from signoff.adapters.langchain.readings import (
    call_name,
    from_deepagents,
    result_of,
    thread_id_now,
    thread_of,
    tool_name,
)
from signoff.adapters.langchain.resume import resume_identity
from signoff.adapters.langchain.run import (
    RUN_KEY,
    SignoffContext,
    context_of,
    is_new_run,
    keep_gate,
    knocked_over,
    refixed,
    start,
    trusted_of,
)
from signoff.adapters.telling import BLOCKED_OPTION, FULL_MODE_NOTE
from signoff.canonical import args_hash
from signoff.errors import Conflict
from signoff.kernel.execution import Execution, _current
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.kernel.protocol import GateProtocol
from signoff.model import (
    InteractionMode,
    RequestStatus,
    ReviewMode,
    RunContext,
    ToolCall,
)
from signoff.policy.modes import clamp

LOST_RESULT = ("[signoff] This call's answer was lost when new input was refused while the run "
               "was paused; it was not run again here (it may have run before). Call it again "
               "if you need it.")
RUNS_REMEMBERED = 10_000  # (thread, call id) → run contexts kept for the tool hook
CONTEXTS_REMEMBERED = 1_000  # run id → the run's context, rebuilt from the state otherwise
UNGATED_SUBAGENT = ("[signoff] The subagent {name!r} runs its tools without signoff's review, "
                    "so it was not started. Do the work with your own tools, or use a "
                    "subagent that is reviewed: {known}.")
GUARD_TEXT = ("Nobody can answer questions in this run. Use the context you have and make "
              "minimal, reversible assumptions, listing them in your answer. " + BLOCKED_OPTION)


class SignoffState(AgentState[Any]):
    signoff_run: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]


@dataclass(frozen=True, slots=True)
class _Run:
    """Run the call as proposed (the policy allowed it)."""

    request: ToolCallRequest


@dataclass(frozen=True, slots=True)
class _Claimed:
    """Run exactly the approved arguments under this claim, then report."""

    request: ToolCallRequest
    execution: Execution
    rewrite: AIMessage | None  # the proposing message with every edit of its turn
    note: str | None = None  # an approver's edit and its reason, told to the model


class SignoffMiddleware(AgentMiddleware[SignoffState, Any, Any]):
    state_schema = SignoffState

    def __init__(self, gate: GateProtocol, *,
                 interaction_mode: InteractionMode | str = "interactive",
                 principal: str | None = None, subagent_wait: float = 300.0,
                 clarification_tool: str | None = None,
                 gated_subagents: Iterable[str] = (),
                 resume_decisions_as: str | None = None) -> None:
        """``resume_decisions_as``: the opt-in to LangChain's HITL resume protocol — the
        name of the signoff user whose decisions a resume value carrying them becomes
        (read from the store at each decision: a disabled or removed user is refused at
        once; an agent identity never). Without it, a resume is only a wake-up.
        ``gated_subagents``: the subagents known to run with signoff (deepagents:
        ``signoff.adapters.deepagents.gate_subagents`` fills it)."""
        super().__init__()
        self.gate = gate
        self.resume_decisions_as = resume_identity(gate, resume_decisions_as)
        keep_gate(gate)
        self.default = SignoffContext(interaction_mode=interaction_mode, principal=principal)
        self.subagent_wait = subagent_wait
        self.pauses = Pauses(gate, subagent_wait=subagent_wait,
                             resume_decisions_as=self.resume_decisions_as)
        # Subagents known to run with signoff (a SignoffMiddleware of this gate in their
        # own stack): only these may be started by a tool the policy marks ``subagent``.
        self.gated_subagents: set[str] = set(gated_subagents)
        self.clarification = clarification_tool or gate.config.clarification_tool
        self.tools = []
        self._runs: dict[tuple[str | None, str], RunContext] = {}
        self._contexts: dict[Any, tuple[dict[str, Any], RunContext]] = {}
        # (thread, call id) of calls that went through this process's tool hook: their
        # answers are the gate's, so the next model turn needs no store read to know it
        self._hooked_calls: dict[tuple[str | None, str], None] = {}
        # id(tool) → (tool, the deepagents backend it runs on, checked against the policy)
        self._backends: dict[int, tuple[Any, Any]] = {}

    # ---- the model turn ---------------------------------------------------------------------

    def _before_model(self, request: ModelRequest[Any]) -> tuple[
            ModelRequest[Any], RunContext, dict[str, Any] | None] | ExtendedModelResponse[Any]:
        for offered in request.tools:  # before the model may call any of them
            self._backend(offered)
        state = request.state
        update = None
        restored = self._set_back_up(state)  # input of any role may have knocked it over
        if restored is not None:
            return restored
        if is_new_run(state):
            trusted = child.inherited(
                trusted_of(request.runtime.context if request.runtime else None))
            run, entry = start(self.gate, state, get_config(), trusted, self.default)
            self._keep_context(entry, run)
            update = {RUN_KEY: entry}
        else:
            entry = state[RUN_KEY]  # type: ignore[literal-required]
            run = self._context(entry)
            self._refuse_while_waiting(run, request.messages)
            again = refixed(self.gate, run, entry)  # a mode chosen while the run waited
            if again is not None:
                run, entry = again
                self._keep_context(entry, run)
                update = {RUN_KEY: entry}
        if self.clarification and self._no_human(run):
            tools = [t for t in request.tools if tool_name(t) != self.clarification]
            note = FULL_MODE_NOTE
            if request.system_message is not None:
                note = f"{request.system_message.text}\n\n{note}"
            request = request.override(tools=tools, system_message=SystemMessage(note))
        return request, run, update

    def _after_model(self, response: ModelResponse[Any], run: RunContext,
                     update: dict[str, Any] | None, history: Sequence[BaseMessage]) -> Any:
        result: list[BaseMessage] = []
        changed = False
        used: set[str] | None = None
        for message in response.result:
            if isinstance(message, AIMessage) and message.tool_calls:
                if used is None:  # ids an earlier turn used: a provider would see them twice
                    used = {str(c["id"]) for m in history if isinstance(m, AIMessage)
                            for c in m.tool_calls if c.get("id")}
                cleaned, dropped = strip_bad_ids(message, used)
                changed = changed or bool(dropped)
                result.append(cleaned)
                self._remember(run, cleaned)
            else:
                result.append(message)
        if changed:
            response = ModelResponse(result=result,
                                     structured_response=response.structured_response)
        if update is not None:
            return ExtendedModelResponse(model_response=response, command=Command(update=update))
        return response

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]) -> Any:
        prepared = self._before_model(request)
        if isinstance(prepared, ExtendedModelResponse):
            return prepared
        request, run, update = prepared
        return self._after_model(handler(request), run, update, request.messages)

    async def awrap_model_call(
            self, request: ModelRequest[Any],
            handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]) -> Any:
        prepared = await asyncio.to_thread(self._before_model, request)
        if isinstance(prepared, ExtendedModelResponse):
            return prepared
        request, run, update = prepared
        return self._after_model(await handler(request), run, update, request.messages)

    def _refuse_while_waiting(self, run: RunContext, messages: Sequence[BaseMessage]) -> None:
        """The model is never called while its thread waits on a decision: a paused run
        goes on only through its calls' decisions, so a tool message handed in as input
        (a forged answer to a paused call) is refused. Answers to calls that went through
        this process's tool hook are the gate's own; otherwise one fresh read decides. A
        subagent's asks wait in place, never as a pause: what its thread waits on is its
        parent's, and the child goes on as part of the parent's live tool call."""
        thread = run.thread_id
        if run.parent_call:
            return
        last = next((m for m in reversed(messages)
                     if isinstance(m, AIMessage) and m.tool_calls), None)
        if not thread or last is None or all(
                (thread, str(c.get("id"))) in self._hooked_calls for c in last.tool_calls):
            return
        pending = self.gate.thread_memory(thread, fresh=True).pending
        if pending:
            raise Conflict(f"thread {thread} is waiting for {len(pending)} decision(s) "
                           f"({pending[0][0]}); resolve them first", code="thread_waiting")

    def _set_back_up(self, state: Mapping[str, Any]) -> ExtendedModelResponse[Any] | None:
        """New input that knocked a pause over (LangGraph drops a paused step's interrupts
        when input arrives): refused while a request still waits; once every request is
        decided, the pause is set back up instead of a new run — the refused input leaves
        the history, the proposing message is emitted again so its calls are routed to
        the tools, where each reads its decision. A call that ran beside the pause lost
        its result with the step: it is answered with a note, never run twice."""
        thread = thread_id_now()
        found = knocked_over(self.gate, state, thread)
        if found is None:
            return None
        waiting = [r.id for r in found.requests.values() if r.status is RequestStatus.PENDING]
        if waiting:
            raise Conflict(f"thread {thread} is waiting for {len(waiting)} decision(s) "
                           f"({waiting[0]}); resolve them first", code="thread_waiting")
        lost = [tool_message({"id": call_id, "name": call_name(found.message, call_id)},
                             LOST_RESULT, error=True, code="result_lost")
                for call_id in found.unanswered if call_id not in found.requests]
        removed = [RemoveMessage(id=str(m.id)) for m in found.refused if m.id]
        return ExtendedModelResponse(
            model_response=ModelResponse(result=[found.message]),
            command=Command(update={"messages": [*removed, *lost]}))

    # ---- the tool call ----------------------------------------------------------------------

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]) -> Any:
        plan = self._prepare(request)
        if isinstance(plan, ToolMessage):
            return plan
        with child.running(str(request.tool_call["id"]), self._run_of(request)):
            if isinstance(plan, _Run):
                return handler(plan.request)
            token = _current.set(plan.execution)
            try:
                result = handler(plan.request)
            except Exception as exc:
                return self._settle(plan, None, exc)
            finally:
                _current.reset(token)
        return self._settle(plan, result, None)

    async def awrap_tool_call(
            self, request: ToolCallRequest,
            handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]) -> Any:
        plan = await asyncio.to_thread(self._prepare, request)
        if isinstance(plan, ToolMessage):
            return plan
        with child.running(str(request.tool_call["id"]), self._run_of(request)):
            if isinstance(plan, _Run):
                return await handler(plan.request)
            token = _current.set(plan.execution)
            try:
                result = await handler(plan.request)
            except Exception as exc:
                return await asyncio.to_thread(self._settle, plan, None, exc)
            finally:
                _current.reset(token)
        return await asyncio.to_thread(self._settle, plan, result, None)

    def _no_human(self, run: RunContext) -> bool:
        """Full mode (as the operator's ceiling lets it be) or an unattended run: nobody
        will answer a clarifying question."""
        mode = clamp(run.review_mode or ReviewMode.MANUAL, self.gate.config.ceiling)
        return mode is ReviewMode.FULL or run.interaction_mode is not InteractionMode.INTERACTIVE

    def _remember(self, run: RunContext, message: AIMessage) -> None:
        """The run each call of this turn belongs to, for the tool hook: reading it back
        from ``request.state`` makes LangGraph rebuild the whole state for every call."""
        thread = run.thread_id
        for call in message.tool_calls:
            self._runs[(thread, str(call["id"]))] = run
        while len(self._runs) > RUNS_REMEMBERED:
            self._runs.pop(next(iter(self._runs)), None)

    def _context(self, run: Mapping[str, Any]) -> RunContext:
        """The run's context, built once per run (the state's entry is fixed at its start;
        an entry that differs from the one remembered is read again)."""
        kept = self._contexts.get(run.get("run_id"))
        if kept is not None and kept[0] == run:
            return kept[1]
        context = context_of(run)
        self._keep_context(run, context)
        return context

    def _keep_context(self, run: Mapping[str, Any], context: RunContext) -> None:
        self._contexts[run.get("run_id")] = (dict(run), context)
        while len(self._contexts) > CONTEXTS_REMEMBERED:
            self._contexts.pop(next(iter(self._contexts)), None)

    def _run_of(self, request: ToolCallRequest) -> RunContext | None:
        """The call's run: remembered from this process's model hook for that turn, else
        (a resume in another process, say) read from the graph state."""
        remembered = self._runs.get((thread_of(request), str(request.tool_call["id"])))
        if remembered is not None:
            return remembered
        state = request.state if isinstance(request.state, Mapping) else {}
        found = state.get(RUN_KEY)
        return self._context(found) if isinstance(found, dict) and found else None

    def _prepare(self, request: ToolCallRequest) -> ToolMessage | _Run | _Claimed:
        try:
            plan = self._plan(request)  # a pause raises (LangGraph's interrupt) from here
        except Conflict as exc:
            if exc.code != "call_id_reused":
                raise
            plan = reused_id(request.tool_call, exc.message)
        # Answered through the gate here (not paused): see _refuse_while_waiting.
        self._hooked_calls[(thread_of(request), str(request.tool_call["id"]))] = None
        while len(self._hooked_calls) > RUNS_REMEMBERED:
            self._hooked_calls.pop(next(iter(self._hooked_calls)), None)
        return plan

    def _plan(self, request: ToolCallRequest) -> ToolMessage | _Run | _Claimed:
        call = request.tool_call
        run = self._run_of(request)
        context = run or RunContext(
            thread_id=thread_of(request), interaction_mode=InteractionMode(
                self.default.interaction_mode))
        if self.clarification and call["name"] == self.clarification and run \
                and self._no_human(run):
            return tool_message(call, GUARD_TEXT, guarded=True)
        ungated = self._ungated_subagent(call)
        if ungated is not None:
            return ungated
        backend = self._backend(request.tool)
        if backend is not None:
            from signoff.adapters.deepagents import relative_path  # noqa: PLC0415 (optional)

            relative = relative_path(self.gate.config, backend, call)
            if relative is not None:
                return tool_message(call, relative, error=True, code="relative_path")
        proposal = self.gate.propose(ToolCall(id=call["id"], name=call["name"],
                                              args=call["args"]), context)
        if proposal.kind is ProposalKind.ALLOWED:
            return _Run(request)
        if proposal.kind in (ProposalKind.DENIED, ProposalKind.BLOCKED):
            return refused(call, proposal.verdict)
        assert proposal.request is not None
        outcome = self.pauses.decision(proposal.request.id, call, context, request.tool)
        if outcome.kind is not OutcomeKind.APPROVED:
            return from_outcome(call, outcome)
        claimed = self.gate.claim(proposal.request.id)
        if isinstance(claimed, Outcome):
            return from_outcome(call, claimed)
        rewrite = None
        if args_hash(claimed.args) != args_hash(call["args"]):
            state = request.state if isinstance(request.state, Mapping) else {}
            rewrite = self.pauses.rewrite(state, str(call["id"]), context)
        return _Claimed(request.override(tool_call={**call, "args": claimed.args}), claimed,
                        rewrite, edit_note(outcome))

    def _backend(self, tool: Any) -> Any:
        """The deepagents backend ``tool`` runs on, checked against the policy: raises
        ``PolicyError(backend_mismatch)`` when they read paths otherwise (every time: a
        mismatch is never remembered as checked). ``None`` for any other tool."""
        if tool is None or isinstance(tool, Mapping):
            return None
        kept = self._backends.get(id(tool))
        if kept is not None and kept[0] is tool:
            return kept[1]
        backend = None
        if from_deepagents(tool):
            from signoff.adapters.deepagents import (  # noqa: PLC0415 (optional: deepagents)
                backend_of,
                check_backend,
            )

            backend = backend_of(tool)
            if backend is not None:
                check_backend(self.gate.config, backend)
        self._backends[id(tool)] = (tool, backend)
        while len(self._backends) > CONTEXTS_REMEMBERED:
            self._backends.pop(next(iter(self._backends)), None)
        return backend

    def _ungated_subagent(self, call: Mapping[str, Any]) -> ToolMessage | None:
        """A call that would start a subagent running without signoff: refused before it
        reaches the policy, so no approval can start it either (its tools would run
        unreviewed, whatever was approved here)."""
        spec = self.gate.config.tools.get(str(call["name"]))
        if spec is None or spec.subagent is None:
            return None
        args = call.get("args")
        name = args.get(spec.subagent) if isinstance(args, Mapping) else None
        if isinstance(name, str) and name in self.gated_subagents:
            return None
        known = ", ".join(repr(n) for n in sorted(self.gated_subagents)) or "none is set up"
        return tool_message(call, UNGATED_SUBAGENT.format(name=name, known=known),
                            error=True, code="ungated_subagent")

    def _settle(self, plan: _Claimed, result: ToolMessage | Command[Any] | None,
                failure: Exception | None) -> Any:
        """Record what the claimed call did; answer with its message (and the rewrite)."""
        call = plan.request.tool_call
        if failure is not None:
            self.gate.report(plan.execution, error=f"{type(failure).__name__}: {failure}")
            message: ToolMessage = tool_message(call, f"The call failed: {failure}", error=True)
        elif isinstance(result, ToolMessage):
            message = result
            if result.status == "error":
                self.gate.report(plan.execution, error=str(result.content))
            else:
                self.gate.report(plan.execution, result=result_of(result))
        else:
            self.gate.report(plan.execution, result=None)
            return result
        message = with_note(message, plan.note)
        if plan.rewrite is not None:
            return Command(update={"messages": [plan.rewrite, message]})
        return message
