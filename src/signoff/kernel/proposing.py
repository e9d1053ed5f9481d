"""Proposing a call: the verdict, and for an ask the durable request (a part of the gate).

``propose`` evaluates the call with the run's context (its review mode fixed at
run start: explicit, else the thread's stored mode, else the policy default; a mode a
person stored lends only that person's authority, read as stored now:
``kernel.mode_authority``).
An allow, deny or block changes nothing and is audited through the batched
verdict log (``signoff.kernel.verdicts``) — unless it used a grant, whose use count is
committed first. An ask becomes an approval request, inserted with its audit
event in one transaction; proposing the same call id again in the thread finds
that request instead (a LangGraph node re-run, or another process). ``propose_now``
is ``propose`` for the calls it can answer without the database (a quick allowed
verdict, the thread's memory remembered), for an event loop that must not wait on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from signoff import inputs
from signoff.audit import AuditKind, to_us
from signoff.canonical import args_hash, parse_args
from signoff.errors import Conflict
from signoff.kernel import fast_paths
from signoff.kernel.hooks import Hooks
from signoff.kernel.mode_authority import lent
from signoff.kernel.outcomes import Proposal, ProposalKind
from signoff.kernel.ownership import mode_counts
from signoff.kernel.requests import build_request
from signoff.kernel.tools import ToolEntry
from signoff.kernel.verdicts import VerdictLog
from signoff.kernel.write_evidence import WriteEvidence, write_evidence
from signoff.kernel.written_requests import WrittenRequests
from signoff.model import Effect, RequestStatus, RunContext, ToolCall, Verdict
from signoff.policy import Policy
from signoff.policy.modes import parse_review_mode
from signoff.policy.quick import quick_verdict
from signoff.store.base import Store

if TYPE_CHECKING:
    from signoff.store.thread_memory import ThreadMemory


class Proposer:
    """The propose half of the gate: a call's verdict, and for an ask its request."""

    def __init__(self, store: Store, policy: Policy, *, tools: dict[str, ToolEntry],
                 verdicts: VerdictLog | None, written: WrittenRequests, hooks: Hooks,
                 clock: Callable[[], float], agent: str | None, worker_id: str) -> None:
        self.store = store
        self.policy = policy  # with the store as its memory (grants, rejections)
        self.tools = tools  # the gate's registry, shared: a tool validates its own input
        self.verdicts = verdicts  # the batched audit of verdicts (``None``: written at once)
        self.written = written  # requests proposed here, which a decision may then not re-read
        self.hooks = hooks
        self.clock = clock
        self.agent = agent
        self.worker_id = worker_id  # names the waiting worker on a subagent's request

    def context_for(self, context: RunContext | None) -> RunContext:
        """Fix the run's review mode: explicit, else the thread's stored mode (unless the
        asker raised it itself: ``signoff.kernel.ownership``), else default."""
        context = context or RunContext()
        if context.review_mode is None and context.thread_id:
            return self._stored_mode(context, self.store.thread_memory(context.thread_id))
        return context

    def _stored_mode(self, context: RunContext, memory: ThreadMemory) -> RunContext:
        if memory.mode is None:
            return context
        config = self.policy.config
        # A mode the asker raised itself does not count for its own calls.
        mode = mode_counts(parse_review_mode(memory.mode), memory.mode_by,
                           (context.principal, self.agent), config.default_review_mode,
                           self_service=config.self_service_modes)
        # A person's mode above the default lends only that person's authority
        # (``kernel.mode_authority``); the default is the operator's own.
        setter = memory.mode_by if mode.rank > config.default_review_mode.rank else None
        return _replace(context, review_mode=mode, mode_setter=setter)

    def check(self, call: ToolCall, context: RunContext | None = None) -> Verdict:
        return self.policy.evaluate(call, lent(self.store, self.context_for(context),
                                               self.clock()))

    def propose_now(self, call: ToolCall, context: RunContext | None = None) -> Proposal | None:
        """``propose`` for a call it can answer from memory alone, else ``None`` with
        nothing done: an allowed verdict of the quick path (``signoff.policy.quick``: a
        tool whose arguments cannot change it), the thread's memory remembered
        (``Store.remembered_thread_memory``) and its audit event batched (``verdicts``).
        The same verdict and audit event as ``propose``, without waiting on the database,
        so an event loop may call it before sending ``propose`` to a worker thread (the
        MCP proxy does for every call)."""
        verdicts = self.verdicts
        if verdicts is None:
            return None
        context = context or RunContext()
        if context.thread_id:
            memory = self.store.remembered_thread_memory(context.thread_id)
            if memory is None:  # propose would read it (its mode, its rejections)
                return None
            if context.review_mode is None:
                context = self._stored_mode(context, memory)
        verdict = quick_verdict(self.policy, call, context)
        if verdict is None or verdict.effect is not Effect.ALLOW or verdict.review is not None \
                or verdict.grant_id:
            return None
        now = self.clock()
        args = parse_args(call.args)  # well-formed: the quick path has parsed it
        if call.name in self.tools:
            # A call its own tool would refuse is bad input, whatever the verdict.
            self.tools[call.name].validate(args, edit=False)
        verdicts.add(AuditKind.CALL_ALLOWED, at_us=to_us(now),
                     actor=context.principal or self.agent,
                     data=_call_record(call, verdict, context))
        return Proposal(kind=ProposalKind.ALLOWED, verdict=verdict)

    def propose(self, call: ToolCall, context: RunContext | None = None, *,
                evidence: Sequence[str] = (), agent: str | None = None) -> Proposal:
        """Evaluate and, for an ask, create (or find again) the durable approval request."""
        evidence = inputs.texts("evidence", evidence, inputs.EVIDENCE_MAX, inputs.EVIDENCE_ITEMS)
        # The rule is ``judge``; ``fast_paths.propose_unread`` may answer first, on a thread
        # it need not read (PostgreSQL: a round trip less), or leave it to the rule.
        proposal = fast_paths.propose_unread(self, call, context, evidence, agent=agent)
        if proposal is None:
            proposal = self.judge(call, context, evidence, agent=agent)
        assert proposal is not None  # only an assumption gives up
        return proposal

    def judge(self, call: ToolCall, context: RunContext | None, evidence: Sequence[str],
              *, assumed: str | None = None, agent: str | None = None) -> Proposal | None:
        """The rule of ``propose``: evaluate the call on the thread's memory and, for an
        ask, create (or find again) its request. ``assumed``: the thread whose memory is
        taken for empty, unread (``fast_paths.propose_unread``); a request is then created
        only if the thread truly has none (in the same statement: else
        ``changed_underneath``, nothing written), and ``None`` means: propose again,
        reading it. Any verdict but ask gives up at once: it has no write to require it
        with."""
        context = lent(self.store, self.context_for(context), self.clock())
        args: dict[str, Any] = {}
        for attempt in range(3):
            verdict = self.policy.evaluate(call, context)
            if assumed is not None and verdict.effect is not Effect.ASK:
                return None
            now = self.clock()
            if attempt == 0 and verdict.effect is not Effect.DENY:
                args = parse_args(call.args)  # well-formed, or the verdict would be a deny
                if call.name in self.tools:
                    # A call its own tool would refuse is bad input, whatever the verdict.
                    self.tools[call.name].validate(args, edit=False)
            if verdict.effect is Effect.ASK:
                break
            kind = {Effect.ALLOW: ProposalKind.ALLOWED, Effect.DENY: ProposalKind.DENIED,
                    Effect.BLOCKED: ProposalKind.BLOCKED}[verdict.effect]
            if verdict.review is not None and context.thread_id and call.id:
                # Reviewed: keep the answer (a resume recalls it) and audit it now.
                with self.store.transaction() as tx:
                    tx.put_review(context.thread_id, call.id, args_hash=verdict.args_hash
                                  or args_hash(args), record=verdict.review, at=now)
                    tx.append_audit(_CALL_KINDS[kind], at_us=to_us(now), request_id=None,
                                    actor=context.principal or self.agent,
                                    data=_call_record(call, verdict, context))
                return Proposal(kind=kind, verdict=verdict)
            if self.verdicts is not None and not verdict.grant_id:
                self.verdicts.add(_CALL_KINDS[kind], at_us=to_us(now),
                                  actor=context.principal or self.agent,
                                  data=_call_record(call, verdict, context))
                return Proposal(kind=kind, verdict=verdict)
            with self.store.transaction() as tx:
                # The grant was read before this transaction: count the use first, and if
                # someone else used it up meanwhile, evaluate again without it.
                if verdict.grant_id and not tx.use_grant(verdict.grant_id):
                    continue
                tx.append_audit(_CALL_KINDS[kind], at_us=to_us(now), request_id=None,
                                actor=context.principal or self.agent,
                                data=_call_record(call, verdict, context))
            return Proposal(kind=kind, verdict=verdict)
        else:
            raise Conflict("a standing approval kept being used up while this call was "
                           "evaluated", code="grant_contended")
        tool = self.tools.get(call.name)
        # What a write will change, read from the files before the transaction.
        evidence_of_writes = write_evidence(self.policy, call.name, args)
        # With ``assumed``, a thread that has memory makes these raise ``changed_underneath``
        # with nothing written, and ``propose`` judges the call again on the memory read.
        try:  # a new call id is the common case: insert, and look only on a clash
            return self._create_request(call, args, verdict, context=context, tool=tool,
                                        now=now, evidence=evidence, look_first=False,
                                        writes=evidence_of_writes, assumed=assumed,
                                        agent=agent)
        except Conflict as exc:  # proposed before (a re-run node) or by another process now
            if exc.code != "unique_violation":
                raise
            return self._create_request(call, args, verdict, context=context, tool=tool,
                                        now=now, evidence=evidence, look_first=True,
                                        writes=evidence_of_writes, assumed=assumed,
                                        agent=agent)

    def _create_request(self, call: ToolCall, args: dict[str, Any], verdict: Verdict, *,
                        context: RunContext, tool: ToolEntry | None, now: float,
                        evidence: Sequence[str], look_first: bool,
                        writes: WriteEvidence = ((), {}), assumed: str | None = None,
                        agent: str | None = None) -> Proposal:
        with self.store.transaction() as tx:
            if assumed is not None:
                tx.expect_no_thread_memory(assumed)
            if look_first and context.thread_id and call.id:
                existing = tx.find_request(context.thread_id, call.id)
                if existing is not None:
                    if existing.args_hash != verdict.args_hash or existing.tool != call.name \
                            or existing.definition_hash != call.definition_hash:
                        raise Conflict(f"call id {call.id!r} was already used for another call "
                                       "in this thread", code="call_id_reused")
                    kind = ProposalKind.PENDING if existing.status is RequestStatus.PENDING \
                        else ProposalKind.DECIDED
                    return Proposal(kind=kind, verdict=verdict, request=existing)
            request = build_request(call=call, args=args, verdict=verdict, context=context,
                                    config=self.policy.config, tool=tool,
                                    agent=agent or self.agent,
                                    now=now, evidence=evidence, waiter=self.worker_id,
                                    changes=writes[0], file_versions=writes[1])
            tx.insert_request(request)
            tx.record_audit(AuditKind.REQUEST_CREATED, at_us=to_us(now), request_id=request.id,
                            actor=context.principal or self.agent, data={
                                "tool": request.tool, "call_id": request.call_id,
                                "args_hash": request.args_hash, "risk": request.risk.value,
                                "policy_version": request.policy_version,
                                "decision_id": request.decision_id,
                                "thread_id": request.thread_id, "run_id": request.run_id,
                                "agent": request.agent, "roles": list(request.roles),
                                "approvals_required": request.approvals_required,
                                "expires_at_us": None if request.expires_at is None
                                else to_us(request.expires_at), "review": request.review})
            tx.notify(request.id)
        if self.store.guards_unread:  # a decision taken here may then go unread
            self.written.remember(request)
        if self.hooks.after_insert:
            self.hooks.after_insert(request.id)
        return Proposal(kind=ProposalKind.PENDING, verdict=verdict, request=request)

    def start_run(self, context: RunContext) -> RunContext:
        """Begin a run on a thread: refused (``thread_waiting``) while the thread has a pending
        request from another run — it is waiting for input, not finished. A subagent's run
        (``parent_call``, trusted) is part of its parent's live tool call, so its parent's
        paused siblings do not refuse it. Returns the context with the run's review mode
        fixed (explicit, stored, or default)."""
        if context.thread_id and not context.parent_call:
            # One fresh read: the pending requests, and the thread memory proposing will use.
            memory = self.store.thread_memory(context.thread_id, fresh=True)
            waiting = [request_id for request_id, run in memory.pending
                       if run != context.run_id]
            if waiting:
                raise Conflict(f"thread {context.thread_id} is waiting for "
                               f"{len(waiting)} decision(s) ({waiting[0]}); resolve them "
                               "first", code="thread_waiting")
        context = self.context_for(context)
        if context.review_mode is None:
            context = _replace(context, review_mode=self.policy.config.default_review_mode)
        return context


# The event of a verdict that creates no request.
_CALL_KINDS = {ProposalKind.ALLOWED: AuditKind.CALL_ALLOWED,
               ProposalKind.DENIED: AuditKind.CALL_DENIED,
               ProposalKind.BLOCKED: AuditKind.CALL_BLOCKED}


def _call_record(call: ToolCall, verdict: Verdict, context: RunContext) -> dict[str, Any]:
    return {"tool": call.name if isinstance(call.name, str) else repr(call.name),
            "call_id": call.id if isinstance(call.id, str) else None,
            "args_hash": verdict.args_hash, "code": verdict.code, "source": verdict.source,
            "risk": verdict.risk.value, "policy_version": verdict.policy_version,
            "decision_id": verdict.decision_id, "thread_id": context.thread_id,
            "run_id": context.run_id,
            "rules": [r.rule for r in verdict.reasons if r.rule],
            **({"review": dict(verdict.review)} if verdict.review is not None else {})}


def _replace(context: RunContext, **changes: Any) -> RunContext:
    return dataclasses.replace(context, **changes)
