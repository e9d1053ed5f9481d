"""Running a call end to end: propose, wait for a decision, run it once (a part of the gate).

``run`` is what ``@gate.tool`` and plain-Python callers use; ``resume`` answers a request
whose decision came later, running it here if it was approved and its tool is here. The
async twins share the implementation: the store work runs in a worker thread and only an
async tool itself is awaited on the loop.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from signoff.canonical import parse_args
from signoff.errors import NotFound
from signoff.kernel.execution import Executor
from signoff.kernel.outcomes import Outcome, OutcomeKind, Proposal, ProposalKind, outcome_of
from signoff.kernel.proposing import Proposer
from signoff.kernel.reading import Reader
from signoff.kernel.tools import ToolEntry
from signoff.model import RequestStatus, RunContext, ToolCall
from signoff.store.base import Store


class Runner:
    """Takes a call from its proposal to its outcome, through the other parts."""

    def __init__(self, store: Store, proposer: Proposer, reader: Reader, executor: Executor,
                 *, tools: dict[str, ToolEntry]) -> None:
        self.store = store
        self.proposer = proposer
        self.reader = reader
        self.executor = executor
        self.tools = tools  # the gate's registry, shared

    def resume(self, request_id: str) -> Outcome:
        """The outcome of a request now; an approved one runs here (once) if its tool is here."""
        request, approvals = self.store.request_to_run(request_id)
        if request is None:
            raise NotFound(f"no approval request {request_id!r}", code="not_found")
        if request.status is RequestStatus.APPROVED:
            entry = self.tools.get(request.tool)
            if entry is not None and not entry.is_async:
                return self.executor.execute(request_id, request=request, approvals=approvals)
        return outcome_of(self.reader.settled(request))

    def run(self, call: ToolCall, context: RunContext | None, *, timeout: float,
            fn: Callable[..., Any] | None = None) -> Outcome:
        """Propose; if allowed run now; if pending wait up to ``timeout`` then resume."""
        proposal = self.proposer.propose(call, context)
        if proposal.kind is ProposalKind.ALLOWED:
            entry = self.tools.get(call.name)
            target = fn or (entry.fn if entry is not None else None)
            args = parse_args(call.args)
            if target is None:
                return Outcome(kind=OutcomeKind.APPROVED, args=args)
            try:
                return Outcome(kind=OutcomeKind.EXECUTED, result=target(**args))
            except Exception as exc:
                return Outcome(kind=OutcomeKind.FAILED, error=f"{type(exc).__name__}: {exc}")
        if proposal.kind is ProposalKind.DECIDED:
            assert proposal.request is not None
            return self.resume(proposal.request.id)
        if proposal.kind is not ProposalKind.PENDING:
            return refusal(proposal)
        assert proposal.request is not None
        waited = self.reader.wait(proposal.request.id, timeout=timeout)
        if waited.kind is OutcomeKind.APPROVED:
            return self.resume(proposal.request.id)
        return waited

    async def aresume(self, request_id: str) -> Outcome:
        import asyncio  # noqa: PLC0415 (a sync caller never pays for it)

        request = await asyncio.to_thread(self.reader.get, request_id)
        entry = self.tools.get(request.tool)
        if entry is None or not entry.is_async or request.status is not RequestStatus.APPROVED:
            return await asyncio.to_thread(self.resume, request_id)
        claimed = await asyncio.to_thread(self.executor.claim, request_id)
        if isinstance(claimed, Outcome):
            return claimed
        return await self.executor.arun_claimed(entry, claimed)

    async def arun(self, call: ToolCall, context: RunContext | None, *,
                   timeout: float) -> Outcome:
        import asyncio  # noqa: PLC0415 (a sync caller never pays for it)

        proposal = await asyncio.to_thread(self.proposer.propose, call, context)
        entry = self.tools.get(call.name)
        if proposal.kind is ProposalKind.ALLOWED:
            args = parse_args(call.args)
            if entry is None:
                return Outcome(kind=OutcomeKind.APPROVED, args=args)
            try:
                value = entry.fn(**args)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                return Outcome(kind=OutcomeKind.FAILED, error=f"{type(exc).__name__}: {exc}")
            return Outcome(kind=OutcomeKind.EXECUTED, result=value)
        if proposal.kind is ProposalKind.DECIDED:
            assert proposal.request is not None
            return await self.aresume(proposal.request.id)
        if proposal.kind is not ProposalKind.PENDING:
            return refusal(proposal)
        assert proposal.request is not None
        waited = await asyncio.to_thread(functools.partial(
            self.reader.wait, proposal.request.id, timeout=timeout))
        if waited.kind is OutcomeKind.APPROVED:
            return await self.aresume(proposal.request.id)
        return waited


def refusal(proposal: Proposal) -> Outcome:
    """The outcome of a denied or blocked proposal."""
    verdict = proposal.verdict
    kind = OutcomeKind.DENIED if proposal.kind is ProposalKind.DENIED else OutcomeKind.BLOCKED
    return Outcome(kind=kind, code=verdict.code, message=verdict.message)
