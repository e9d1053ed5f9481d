"""A hosted MCP call's approval, sent once: claimed as it goes out, its result recorded.

The provider runs an approved hosted call itself, so the approval is the execution: just
before the model is called (the agent's ``on_llm_start``) every approval the input sends
now for a call that has a signoff request is claimed (``gate.claim``, a compare-and-set),
after checking that the request's arguments are the ones the provider proposed. A claim
that fails — the approval was set by hand in the run state, a stored state that already
sent it is replayed, the request no longer holds — stops the run before anything is sent
(``Conflict``, ``hosted_approval_refused``). An approval sent earlier is history: the
model has answered since (an item of its own follows it), and it is not claimed again.

The response that follows (``on_llm_end``) carries the provider's ``mcp_call`` for each
approval: its output is reported as the result, its error as a failure. A response
without it leaves the call's fate unknown: an in-process gate marks it ``unknown`` at once
(``Gate.abandon``); a remote one keeps it ``executing`` until ``signoff recover`` finds
its lease run out. Never ``executing`` for ever, never run again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from agents import RunContextWrapper
from agents.items import ModelResponse

from signoff.adapters.openai_agents.hosted import HostedGating, field_of, proposed_hash
from signoff.errors import Conflict
from signoff.kernel.execution import Execution
from signoff.kernel.outcomes import Outcome, Proposal, ProposalKind
from signoff.model import ApprovalRequest, RunContext

# Items a model answers with: whatever follows one of them was sent before the last answer.
_MODEL_ITEMS = frozenset({"mcp_approval_request", "mcp_list_tools", "reasoning", "compaction"})
LOST = "the provider's response carried no result for the approved hosted MCP call"


class Sending:
    """The approvals of one ``gate_agent`` call's hosted tools, claimed and recorded."""

    def __init__(self, gating: HostedGating) -> None:
        self.gating = gating
        # id of a run's context → the claims its model call in flight sent (a run makes one
        # model call at a time; the next call's ``on_llm_start`` replaces what a failed one
        # left).
        self._sent: dict[int, list[tuple[str, Execution]]] = {}

    async def claim(self, context: RunContextWrapper[Any], items: Sequence[Any]) -> None:
        """Claim every approval ``items`` send now, or refuse to send any."""
        self._sent.pop(id(context), None)
        answers = new_approvals(items)
        if not answers:
            return
        scope = self.gating.scope
        run = scope.context(context.context)
        if not run.thread_id:
            return
        requests = await asyncio.to_thread(scope.gate.thread_requests, run.thread_id)
        by_call = {r.call_id: r for r in requests
                   if r.call_id in answers and self.gating.names(r.tool)}
        for call_id in answers - by_call.keys():  # not among the thread's newest requests
            request = await self._judged_again(items, call_id, run)
            if request is not None:
                by_call[call_id] = request
        claimed: list[tuple[str, Execution]] = []
        for call_id, request in by_call.items():
            asked = _request_item(items, call_id)
            if request.run_hash != request.args_hash or (
                    asked is not None and proposed_hash(asked) != request.args_hash):
                raise Conflict(f"the approval of hosted call {call_id} (request {request.id}) "
                               "does not carry the approved arguments; nothing was sent",
                               code="hosted_approval_refused")
            got = await asyncio.to_thread(scope.gate.claim, request.id)
            if isinstance(got, Outcome):
                raise Conflict(
                    f"the run state approves hosted call {call_id}, but its request "
                    f"{request.id} is {got.kind.value} in signoff: nothing was sent. Resume a "
                    "stored run state through apply_decisions(state)",
                    code="hosted_approval_refused", status=got.kind.value)
            claimed.append((call_id, got))
        if claimed:
            self._sent[id(context)] = claimed

    async def _judged_again(self, items: Sequence[Any], call_id: str,
                            run: RunContext) -> ApprovalRequest | None:
        """An approval whose request the thread's newest requests did not show: the call is
        proposed again (the gate finds its request by its call id, or judges it afresh), so
        an approval is sent unclaimed only for a call the policy allows now. A call of these
        tools the input does not show, or one the gate refuses, stops the run."""
        asked = _request_item(items, call_id)
        if asked is None:
            return None  # no approval request of ours in the input: another gating's
        if not self.gating.names(self.gating.policy_name(asked)):
            return None
        found = await self.gating.propose(asked, run)
        if isinstance(found, Proposal) and found.kind is ProposalKind.ALLOWED:
            return None
        if isinstance(found, Proposal) and found.request is not None:
            return found.request
        raise Conflict(f"the run state approves hosted call {call_id}, which signoff does not "
                       "approve: nothing was sent", code="hosted_approval_refused")

    async def record(self, context: RunContextWrapper[Any], response: ModelResponse) -> None:
        """Report what the provider did with each approval the call sent."""
        gate = self.gating.scope.gate
        for call_id, execution in self._sent.pop(id(context), []):
            ran = _call_of(response.output, call_id)
            if ran is not None:
                error = field_of(ran, "error")
                if error:
                    await asyncio.to_thread(gate.report, execution, error=_text(error))
                else:
                    await asyncio.to_thread(gate.report, execution,
                                            result=field_of(ran, "output"))
                continue
            abandon = getattr(gate, "abandon", None)  # an in-process Gate
            if abandon is not None:
                await asyncio.to_thread(abandon, execution, reason=LOST)


def new_approvals(items: Sequence[Any]) -> set[str]:
    """The approval request ids the input approves after the model's last answer."""
    found: set[str] = set()
    for item in reversed(items):
        kind = field_of(item, "type")
        if kind in _MODEL_ITEMS or (isinstance(kind, str) and kind.endswith("_call")) or (
                kind == "message" and field_of(item, "role") == "assistant"):
            break
        if kind == "mcp_approval_response" and field_of(item, "approve") is True:
            request_id = field_of(item, "approval_request_id")
            if isinstance(request_id, str):
                found.add(request_id)
    return found


def _request_item(items: Sequence[Any], call_id: str) -> Any:
    return next((i for i in items if field_of(i, "type") == "mcp_approval_request"
                 and field_of(i, "id") == call_id), None)


def _text(error: Any) -> str:
    """The provider's error (text, or a structured one: protocol, HTTP, the tool's) as text."""
    if isinstance(error, str):
        return error
    dump = getattr(error, "model_dump", None)
    return json.dumps(dump(exclude_none=True) if callable(dump) else error,
                      ensure_ascii=False, default=str)


def _call_of(output: Sequence[Any], call_id: str) -> Any:
    """The provider's ``mcp_call`` for the approval request ``call_id``."""
    return next((i for i in output if field_of(i, "type") == "mcp_call"
                 and field_of(i, "approval_request_id") == call_id), None)
