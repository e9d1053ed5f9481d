"""A paused run and the decisions people took: the SDK's interruptions read as signoff
requests (``paused``) and answered from the store (``apply_decisions``).

A resume value is only a wake-up: what ``apply_decisions`` sets in the run state —
``state.approve(item)`` for a call people approved, ``state.reject(item,
rejection_message=…)`` with the reason and alternatives for one they rejected, or that
expired, was withdrawn or no longer holds — is read from the store each time. A call
still waiting is left as it is, and ``Runner.run(agent, state)`` pauses on it again.
Approving an item in the run state is not what runs it: the gated tool claims the request
when the SDK invokes it, so an approval set by hand, or a run state resumed twice, runs
nothing that people did not approve, and nothing twice.

Each interruption is answered by its call's request, found on the thread by its call id.
One the gate has not judged yet (the SDK asks for approval without calling
``needs_approval`` when it cannot inspect the arguments) is proposed here; one whose tool
is not gated cannot be judged and is rejected: what the gate cannot see, a human decides,
and no human saw it in signoff.

A hosted MCP tool's approval request is answered by its request too (``hosted.answer``):
approved → ``state.approve`` (the approval is claimed when it is sent), an edit or other
arguments → rejected, one already answered (a replayed state) → rejected, never approved
twice. Its ``tool`` is the policy's name, ``<server_label>__<tool>``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from agents import Agent, FunctionTool, RunState, ToolApprovalItem

from signoff.adapters.openai_agents import texts
from signoff.adapters.openai_agents.agent import is_gated
from signoff.adapters.openai_agents.hosted import field_of, gating_of, is_hosted_request
from signoff.adapters.openai_agents.tools import GatedTool
from signoff.errors import ConfigurationError
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind

UNGATED = (f"{texts.NOTE} signoff could not judge this call (its tool is not gated by "
           "signoff), so it was not run.")
# The outcomes the SDK is told to run: the gated tool's claim decides what really runs
# (an approved call once; one that already ran answers with its recorded result).
RUNS = (OutcomeKind.APPROVED, OutcomeKind.EXECUTED, OutcomeKind.FAILED)


@dataclass(frozen=True, slots=True)
class Paused:
    """One interruption of the run, as signoff sees it."""

    item: ToolApprovalItem
    call_id: str | None
    tool: str | None
    request_id: str | None  # the signoff request people decide (None: never one)
    outcome: Outcome | None  # the request's outcome now
    refusal: str | None = None  # why it is not run, when it has no request to decide
    hosted: bool = False  # a hosted MCP tool's approval request (call_id: its id)

    @property
    def pending(self) -> bool:
        return self.outcome is not None and self.outcome.kind is OutcomeKind.PENDING


async def paused(state: Any) -> list[Paused]:
    """The interruptions of ``state`` (a ``RunState`` or a run result), each with its signoff
    request and that request's outcome now."""
    if not isinstance(state, RunState):
        state = state.to_state()
    app_context = state._context.context if state._context is not None else None
    return [await _read(item, app_context) for item in state.get_interruptions()]


async def apply_decisions(state: RunState[Any, Any]) -> list[Paused]:
    """Set what people decided onto ``state``'s interruptions; the calls still waiting are
    returned (``Runner.run(agent, state)`` pauses on them again). A state whose current
    agent is not gated is refused (``ungated_agent``): resumed, it would run tools unjudged
    — load the stored state into the agent ``gate_agent`` returned."""
    current = state._current_agent
    if isinstance(current, Agent) and not is_gated(current):
        raise ConfigurationError(
            f"the run state resumes in agent {current.name!r}, whose tools (or hooks) are not "
            "signoff's: load it with RunState.from_string(<the gated agent>, ...)",
            code="ungated_agent")
    waiting: list[Paused] = []
    for one in await paused(state):
        if one.refusal is not None:
            state.reject(one.item, rejection_message=one.refusal)
        elif one.hosted:
            approve, text = await _answer_hosted(one)
            if approve is None:
                waiting.append(one)
            elif approve:
                state.approve(one.item)
            else:
                state.reject(one.item, rejection_message=text)
        elif one.outcome is None or one.outcome.kind in RUNS:
            state.approve(one.item)  # the tool's claim decides what runs
        elif one.outcome.kind is OutcomeKind.PENDING:
            waiting.append(one)
        else:
            state.reject(one.item, rejection_message=texts.of_outcome(one.outcome))
    return waiting


async def _read(item: ToolApprovalItem, app_context: Any) -> Paused:
    raw = item.raw_item
    if is_hosted_request(raw):
        return await _read_hosted(item, app_context)
    call_id = _field(raw, "call_id") or _field(raw, "id")
    name = item.tool_name
    gated = _gated_tool(item)
    if gated is None or not isinstance(call_id, str):
        return Paused(item, call_id, name, None, None, UNGATED)
    context = gated.scope.context(app_context)
    request_id = await gated.request_of(call_id, context)
    if request_id is not None:
        outcome = await asyncio.to_thread(gated.scope.gate.outcome, request_id)
        return Paused(item, call_id, name, request_id, outcome)
    found = await gated.propose(call_id, _field(raw, "arguments"), context)
    if isinstance(found, str):
        return Paused(item, call_id, name, None, None, found)
    if found.kind is ProposalKind.ALLOWED:  # allowed now: the tool judges it again and runs
        return Paused(item, call_id, name, None, None)
    if found.request_id is None:
        return Paused(item, call_id, name, None, None, texts.refused(found.verdict))
    outcome = await asyncio.to_thread(gated.scope.gate.outcome, found.request_id)
    return Paused(item, call_id, name, found.request_id, outcome)


async def _read_hosted(item: ToolApprovalItem, app_context: Any) -> Paused:
    raw = item.raw_item
    call_id, gating = field_of(raw, "id"), gating_of(item.agent, raw)
    if gating is None or not isinstance(call_id, str):
        return Paused(item, call_id, item.tool_name, None, None, UNGATED, hosted=True)
    name = gating.policy_name(raw)
    context = gating.scope.context(app_context)
    request_id = await gating.request_of(raw, context)
    if request_id is None:  # never judged (the SDK paused before signoff saw it)
        found = await gating.propose(raw, context)
        if isinstance(found, str):
            return Paused(item, call_id, name, None, None, found, hosted=True)
        if found.kind is ProposalKind.ALLOWED:
            return Paused(item, call_id, name, None, None, hosted=True)
        if found.request_id is None:
            return Paused(item, call_id, name, None, None, texts.refused(found.verdict),
                          hosted=True)
        request_id = found.request_id
    outcome = await asyncio.to_thread(gating.scope.gate.outcome, request_id)
    return Paused(item, call_id, name, request_id, outcome, hosted=True)


async def _answer_hosted(one: Paused) -> tuple[bool | None, str | None]:
    gating = gating_of(one.item.agent, one.item.raw_item)
    if gating is None:
        return False, UNGATED
    if one.request_id is None:  # allowed now: approved at once
        return True, None
    if one.pending:
        return None, None
    return await gating.answer(one.request_id, one.item.raw_item)


def _gated_tool(item: ToolApprovalItem) -> GatedTool | None:
    """The gated tool the item's agent calls by this name, if any."""
    tools = getattr(item.agent, "tools", None) or []
    for tool in tools:
        if isinstance(tool, FunctionTool) and tool.name == item.tool_name \
                and isinstance(tool.on_invoke_tool, GatedTool):
            return tool.on_invoke_tool
    return None


def _field(raw: Any, name: str) -> Any:
    return raw.get(name) if isinstance(raw, dict) else getattr(raw, name, None)

