"""A gated call that waits for people, inside a LangGraph run: pause the run with an
interrupt that shows the request (signoff's keys and LangChain's HITL shapes), read the
decision again on every resume — taking one the resume value carries, with
``resume_decisions_as`` — and, in a subagent, wait in place instead. Also the rewrite of
the proposing message with the arguments its approvers edited."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.errors import GraphInterrupt

from signoff.adapters.langchain.hitl import (
    args_schema_of,
    hitl_shapes,
    pause,
    response_schema,
)
from signoff.adapters.langchain.messages import proposing_message, with_edited_args
from signoff.adapters.langchain.resume import note_shown, take_resumed
from signoff.adapters.langchain.run import PAUSE_KEY
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.kernel.protocol import GateProtocol
from signoff.model import RunContext


class Pauses:
    """The middleware's part that pauses for, and reads, a decision."""

    def __init__(self, gate: GateProtocol, *, subagent_wait: float,
                 resume_decisions_as: str | None) -> None:
        self.gate = gate
        self.subagent_wait = subagent_wait
        self.resume_decisions_as = resume_decisions_as

    def _deciding(self) -> Gate:
        """The in-process gate a resume value's decision is taken through
        (``resume_decisions_as`` is refused for any other)."""
        assert isinstance(self.gate, Gate)
        return self.gate

    def decision(self, request_id: str, call: Mapping[str, Any],
                  context: RunContext, tool: Any = None) -> Outcome:
        """The decided outcome: pause (interrupt) until there is one — the store is read
        again on every resume — or, in a subagent, wait in place. With
        ``resume_decisions_as``, a decision the resume value carries is taken first, through
        the gate's rules, for this call's request only."""
        note: str | None = None
        delivery = 0  # this task's interrupts, in order: LangGraph replays them on re-runs
        schema: dict[str, Any] | None = None
        while True:
            outcome = self.gate.outcome(request_id)
            if outcome.kind is not OutcomeKind.PENDING:
                return outcome
            if context.parent_call:
                outcome = self.gate.wait(request_id, timeout=self.subagent_wait)
                if outcome.kind is OutcomeKind.PENDING:
                    return self.gate.cancel(
                        request_id, actor=context.principal,
                        reason=f"the subagent's wait of {self.subagent_wait:g}s ran out")
                return outcome
            args_schema = args_schema_of(tool)
            if self.resume_decisions_as is not None and schema is None:
                schema = response_schema(str(call["name"]), args_schema)
            shown = self.shown(request_id, call, context, args_schema, note)
            try:
                value = pause(shown, schema)
            except GraphInterrupt:  # raised, not replayed: what it shows is what is decided
                if self.resume_decisions_as is not None:
                    note_shown(self._deciding(), request_id, delivery, shown["args_hash"])
                raise
            if self.resume_decisions_as is not None:
                note = take_resumed(self._deciding(), self.resume_decisions_as, request_id, call,
                                    tool=tool, value=value, delivery=delivery)
            delivery += 1

    def shown(self, request_id: str, call: Mapping[str, Any], context: RunContext,
               args_schema: Mapping[str, Any] | None = None,
               note: str | None = None) -> dict[str, Any]:
        """The interrupt value: signoff's own keys, and LangChain's HITL shapes for the call."""
        request = self.gate.get_request(request_id)
        waiting = [r.id for r in self.gate.pending_on_thread(context.thread_id)
                   if r.run_id == context.run_id] if context.thread_id else [request_id]
        own: dict[str, Any] = {
            "request_id": request_id, "call_id": call["id"], "tool": request.tool,
            "summary": request.summary, "risk": request.risk.value,
            "args": json.loads(request.run_args), "args_hash": request.run_hash,
            "thread_id": context.thread_id,
            "run_id": context.run_id, "pending": waiting or [request_id],
            "resume_decisions": self.resume_decisions_as is not None}
        if note:
            own["note"] = note
        shapes = hitl_shapes(request, str(call["id"]), note=note,
                             decisions_by_resume=self.resume_decisions_as is not None,
                             args_schema=args_schema)
        return {PAUSE_KEY: own, **shapes}

    def rewrite(self, state: Mapping[str, Any], call_id: str,
                 context: RunContext) -> AIMessage | None:
        """The proposing AIMessage with the approved arguments of every call of its turn."""
        message = proposing_message(state.get("messages") or [], call_id)
        if message is None or not context.thread_id:
            return None
        ids = {c["id"] for c in message.tool_calls}
        edits: dict[str, Any] = {}
        for req in self.gate.thread_requests(context.thread_id, limit=500):
            if req.call_id in ids and req.approved_args is not None:
                edits[req.call_id] = json.loads(req.approved_args)
        return with_edited_args(message, edits)
