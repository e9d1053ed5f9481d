"""A LangGraph run as signoff sees it: who, which thread, which review mode — and how a
paused run is woken.

The review mode is fixed when the run starts (the trusted ``SignoffContext``,
else ``configurable.review_mode``, else the thread's stored mode, else the
policy default) and kept in the graph state, so every resume of the run uses
it — unless the thread's mode was chosen while the run waited on a decision
(the approval card's "Auto-approve this thread", or a mode set then): a run
whose mode came from the thread takes that mode when it resumes (``refixed``).

The interaction mode, principal and parent call come only from trusted
code: the ``SignoffContext`` the application passes as LangGraph's runtime
``context``, or the middleware's own settings — never from ``configurable``,
which public callers can fill.

A pause is a LangGraph interrupt per pending call, each carrying its request
id (and LangChain's HITL shapes). Resuming wakes the run: the middleware reads
the decisions from the store (with ``resume_decisions_as``, after taking one a
resume value carries). ``resume_command`` builds the ``Command`` that wakes every interrupt
of a paused run, and ``wait_and_resume`` / ``await_and_resume`` are the
wiring an application uses when decisions arrive from the inbox or the CLI;
``decide_and_resume`` is the approval card of an application that shows the
pause itself ("Approve once", "Auto-approve this thread").
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from signoff.errors import InvalidDecision
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.protocol import GateProtocol
from signoff.model import (
    ApprovalRequest,
    ApproveScope,
    Decision,
    InteractionMode,
    RequestStatus,
    ReviewMode,
    RunContext,
)
from signoff.policy.modes import parse_review_mode, resolve_interaction_mode

RUN_KEY = "signoff_run"
PAUSE_KEY = "signoff"


@dataclass(frozen=True, slots=True, kw_only=True)
class SignoffContext:
    """Trusted facts about a run, passed by the application as ``context=``."""

    interaction_mode: InteractionMode | str = InteractionMode.INTERACTIVE
    review_mode: ReviewMode | str | None = None
    principal: str | None = None
    session_id: str | None = None
    parent_call: str | None = None  # set when this agent runs as a subagent of that call
    # Who set ``review_mode``, when a person did (a subagent inherits its parent's): the
    # mode then lends only that person's authority (``signoff.kernel.mode_authority``).
    mode_setter: str | None = None


def trusted_of(runtime_context: Any) -> SignoffContext | None:
    if isinstance(runtime_context, SignoffContext):
        return runtime_context
    nested = getattr(runtime_context, "signoff", None)
    if isinstance(nested, SignoffContext):
        return nested
    if isinstance(runtime_context, Mapping) and isinstance(runtime_context.get("signoff"),
                                                           SignoffContext):
        return runtime_context["signoff"]  # type: ignore[no-any-return]
    return None


def configurable(config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    value = (config or {}).get("configurable") or {}
    return value if isinstance(value, Mapping) else {}


def is_new_run(state: Mapping[str, Any]) -> bool:
    """A run starts when user input is the last message (or nothing was recorded yet)."""
    if not state.get(RUN_KEY):
        return True
    messages = state.get("messages") or []
    return bool(messages) and isinstance(messages[-1], HumanMessage)


def intent_of(messages: list[BaseMessage]) -> str | None:
    """The user's first message of the run: what the run is for."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            text = message.text if isinstance(message.text, str) else str(message.content)
            return text[:2000]
    return None


def start(gate: GateProtocol, state: Mapping[str, Any], config: Mapping[str, Any] | None,
          trusted: SignoffContext | None, default: SignoffContext
          ) -> tuple[RunContext, dict[str, Any]]:
    """Begin a run: refuse it while the thread waits on decisions (``thread_waiting``) and
    fix its review mode. Returns the run and its entry for the graph state."""
    facts = trusted or default
    conf = configurable(config)
    explicit = facts.review_mode or conf.get("review_mode")
    context = RunContext(
        thread_id=_text(conf.get("thread_id")), run_id="run_" + uuid.uuid4().hex,
        session_id=facts.session_id,
        review_mode=parse_review_mode(explicit) if explicit else None,
        mode_setter=facts.mode_setter if facts.review_mode else None,
        interaction_mode=resolve_interaction_mode(facts.interaction_mode),
        principal=facts.principal, parent_call=facts.parent_call,
        intent=intent_of(list(state.get("messages") or [])))
    context = gate.start_run(context)
    assert context.review_mode is not None
    return context, run_entry(context, mode_from="explicit" if explicit else "thread")


def run_entry(context: RunContext, *, mode_from: str = "thread",
              mode_at: float | None = None) -> dict[str, Any]:
    """The run as the graph state keeps it (plain values: checkpointers serialise it).
    ``mode_from``: whether the mode came from the caller or the thread (only the latter
    follows a mode chosen while the run waits); ``mode_at``: that choice, once taken."""
    assert context.review_mode is not None
    return {"run_id": context.run_id, "thread_id": context.thread_id,
            "session_id": context.session_id, "review_mode": context.review_mode.value,
            "interaction_mode": context.interaction_mode.value, "principal": context.principal,
            "parent_call": context.parent_call, "intent": context.intent,
            "mode_from": mode_from, "mode_at": mode_at, "mode_setter": context.mode_setter}


def refixed(gate: GateProtocol, run: RunContext, entry: Mapping[str, Any]
            ) -> tuple[RunContext, dict[str, Any]] | None:
    """The run with its mode fixed again, if the thread's mode was chosen while this run
    waited on it ("auto-approve this thread" applies to the run it resumes);
    ``None`` if not. A mode set while the run was going on, or for a run whose caller gave
    its mode, changes nothing: the mode is fixed per run, and re-fixed only at a resume."""
    if entry.get("mode_from", "thread") != "thread" or not run.thread_id or not run.run_id:
        return None
    memory = gate.thread_memory(run.thread_id)
    if memory.mode_run != run.run_id or memory.mode_at is None \
            or memory.mode_at == entry.get("mode_at"):
        return None
    fixed = gate.context_for(dataclasses.replace(run, review_mode=None, mode_setter=None))
    if fixed.review_mode is None:
        fixed = dataclasses.replace(fixed, review_mode=gate.config.default_review_mode)
    return fixed, run_entry(fixed, mode_from="thread", mode_at=memory.mode_at)


def context_of(run: Mapping[str, Any]) -> RunContext:
    return RunContext(
        thread_id=run.get("thread_id"), run_id=run.get("run_id"),
        session_id=run.get("session_id"), review_mode=ReviewMode(run["review_mode"]),
        interaction_mode=InteractionMode(run["interaction_mode"]),
        principal=run.get("principal"), intent=run.get("intent"),
        parent_call=run.get("parent_call"), mode_setter=run.get("mode_setter"))


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


# ---- a pause that new input knocked over ------------------------------------------------------

# The gates of this process's middlewares: where a knocked-over pause's requests are looked up
# when the caller does not name a gate.
GATES: weakref.WeakSet[GateProtocol] = weakref.WeakSet()


def keep_gate(gate: GateProtocol) -> None:
    """Remember ``gate`` for the helpers that look for a pause without being given one,
    until its store closes: a closed store (an earlier application, an earlier test, a
    PostgreSQL database dropped since) is no place to look, however long the garbage
    collector takes to drop the gate."""
    if gate in GATES:
        return
    GATES.add(gate)
    ref = weakref.ref(gate)

    def forget() -> None:
        kept = ref()
        if kept is not None:
            GATES.discard(kept)

    gate.on_close(forget)


@dataclass(frozen=True, slots=True)
class KnockedOver:
    """A pause LangGraph dropped when input arrived (and signoff refused it): the proposing
    message, the refused input after it, and the requests of its unanswered calls."""

    message: AIMessage
    refused: tuple[BaseMessage, ...]
    requests: dict[str, ApprovalRequest]  # call id → its request
    unanswered: tuple[str, ...]  # every call id of the message without a ToolMessage


def knocked_over(gate: GateProtocol, state: Mapping[str, Any],
                 thread_id: str | None) -> KnockedOver | None:
    """LangGraph writes new input before any node runs, and a paused step's interrupts (and
    the results of calls that finished beside them) are dropped with it: the history has a
    proposing message with unanswered calls, then input — of any role: a user message, an
    assistant message, a system message. Found by the calls' requests, of the paused run
    (its id is in the graph state: another gate's thread of the same name is not it)."""
    run = state.get(RUN_KEY)
    run_id = run.get("run_id") if isinstance(run, Mapping) else None
    messages: Sequence[BaseMessage] = state.get("messages") or []
    if not thread_id or not run_id:
        return None
    index = next((i for i in range(len(messages) - 1, -1, -1)
                  if _proposes(messages[i])), None)
    if index is None:
        return None
    message = messages[index]
    assert isinstance(message, AIMessage)
    tail = messages[index + 1:]
    refused = tuple(m for m in tail if not isinstance(m, ToolMessage))
    if not refused:  # only tool answers after it: the ordinary loop (a fast, store-free exit)
        return None
    answered = {m.tool_call_id for m in tail if isinstance(m, ToolMessage)}
    unanswered = tuple(str(c["id"]) for c in message.tool_calls
                       if c.get("id") and c["id"] not in answered)
    if not unanswered:
        return None
    # One read: the paused calls are the thread's latest requests.
    wanted = set(unanswered)
    requests = {r.call_id: r for r in gate.thread_requests(
        thread_id, limit=max(100, 2 * len(wanted)))
        if r.call_id in wanted and r.run_id == run_id}
    if not requests:
        return None
    return KnockedOver(message, refused, requests, unanswered)


def _proposes(message: BaseMessage) -> bool:
    return isinstance(message, AIMessage) and bool(message.tool_calls)


def _knocked_over_of(agent: Any, config: Mapping[str, Any], state: Any,
                     gate: GateProtocol | None) -> KnockedOver | None:
    thread = _text(configurable(config).get("thread_id"))
    values = state.values if isinstance(state.values, Mapping) else {}
    for candidate in ([gate] if gate is not None else list(GATES)):
        found = knocked_over(candidate, values, thread)
        if found is not None:
            return found
    return None


# ---- waking a paused run ---------------------------------------------------------------------

def pending_request_ids(agent: Any, config: Mapping[str, Any], *,
                        gate: GateProtocol | None = None) -> list[str]:
    """The request ids a paused run waits on: from its interrupts, or — when new input
    knocked the pause over and was refused — from the store (``gate``, else the gates of
    this process's middlewares)."""
    state = agent.get_state(config)
    ids: list[str] = []
    for item in state.interrupts:
        value = item.value if isinstance(item.value, Mapping) else {}
        pause = value.get(PAUSE_KEY) if isinstance(value.get(PAUSE_KEY), Mapping) else None
        if pause and pause.get("request_id"):
            ids.append(str(pause["request_id"]))
    if not state.interrupts:
        found = _knocked_over_of(agent, config, state, gate)
        if found is not None:
            ids = [r.id for r in found.requests.values()]
    return ids


def resume_command(agent: Any, config: Mapping[str, Any], *,
                   gate: GateProtocol | None = None) -> Command[Any] | None:
    """A ``Command`` that wakes every interrupt of the paused run (or a pause new input
    knocked over), or ``None`` if it is not paused. The values are only a wake-up:
    decisions are read from the store."""
    state = agent.get_state(config)
    if not state.interrupts:
        if _knocked_over_of(agent, config, state, gate) is None:
            return None
        return Command(resume={})  # a wake-up: the model step sets the pause back up
    return Command(resume={item.id: {"wake": True} for item in state.interrupts})


def wait_and_resume(agent: Any, gate: GateProtocol, config: Mapping[str, Any], *,
                    timeout: float = 3600.0) -> Any:
    """Block until every request the run waits on is decided (in the inbox, the CLI, the
    API), then resume it; returns what ``invoke`` returns, or ``None`` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        ids = pending_request_ids(agent, config, gate=gate)
        if not ids:
            return None
        undecided = [i for i in ids if gate.get_request(i).status is RequestStatus.PENDING]
        if not undecided:
            command = resume_command(agent, config, gate=gate)
            return agent.invoke(command, config) if command is not None else None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        gate.wait(undecided[0], timeout=remaining)


async def await_and_resume(agent: Any, gate: GateProtocol, config: Mapping[str, Any], *,
                           timeout: float = 3600.0) -> Any:
    """``wait_and_resume`` for asyncio applications (waits off the event loop)."""
    deadline = time.monotonic() + timeout
    while True:
        ids = await asyncio.to_thread(
            functools.partial(pending_request_ids, agent, config, gate=gate))
        if not ids:
            return None
        undecided = [i for i in ids
                     if (await asyncio.to_thread(gate.get_request, i)).status
                     is RequestStatus.PENDING]
        if not undecided:
            command = resume_command(agent, config, gate=gate)
            return await agent.ainvoke(command, config) if command is not None else None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        await asyncio.to_thread(gate.wait, undecided[0], timeout=remaining)


def decide_and_resume(agent: Any, gate: Gate, config: Mapping[str, Any],
                      decisions: Mapping[str, Decision], *, identity: Identity) -> Any:
    """The approval card for an application that shows a pause itself: take ``decisions``
    (request id → ``Decision``) as the signed-in ``identity`` and resume the run once
    nothing it waits on is pending. ``Decision.approve(scope="auto_thread")`` is
    "Auto-approve this thread": the thread switches to ``auto`` and the pause's other
    undecided calls are approved with it (any other decision given here is taken first,
    so it is kept). Returns what ``invoke`` returns, or ``None`` while the run still waits
    (a mandatory call, a quorum). An id the run does not wait on is ``not_in_pause``."""
    waiting = _take(agent, gate, config, decisions, identity)
    if waiting:
        return None
    command = resume_command(agent, config, gate=gate)
    return agent.invoke(command, config) if command is not None else None


async def adecide_and_resume(agent: Any, gate: Gate, config: Mapping[str, Any],
                             decisions: Mapping[str, Decision], *, identity: Identity) -> Any:
    """``decide_and_resume`` for asyncio applications (decides off the event loop)."""
    waiting = await asyncio.to_thread(_take, agent, gate, config, decisions, identity)
    if waiting:
        return None
    command = await asyncio.to_thread(functools.partial(resume_command, agent, config,
                                                        gate=gate))
    return await agent.ainvoke(command, config) if command is not None else None


def _take(agent: Any, gate: Gate, config: Mapping[str, Any],
          decisions: Mapping[str, Decision], identity: Identity) -> list[str]:
    """Decide, switches last; returns the ids still pending."""
    ids = pending_request_ids(agent, config, gate=gate)
    strange = [i for i in decisions if i not in ids]
    if strange:
        raise InvalidDecision(f"the run does not wait on {strange[0]!r}", code="not_in_pause")
    ordered = sorted(decisions.items(),
                     key=lambda item: item[1].scope is ApproveScope.AUTO_THREAD)
    for request_id, decision in ordered:
        if gate.request(request_id).status is RequestStatus.PENDING:  # not approved by a switch
            gate.decide(request_id, decision, identity=identity)
    return [i for i in ids if gate.get_request(i).status is RequestStatus.PENDING]
