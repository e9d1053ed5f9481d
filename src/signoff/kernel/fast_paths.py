"""Fast paths: the decision or proposal the rule would make, in fewer round trips.

Each is an optimisation of a rule that stands on its own (``Decider.decide_locked``,
``Proposer.judge``) and is tried only where the store can require, inside the write
itself, that what it assumed still holds (PostgreSQL: ``Store.guards_unread``). When an
assumption fails nothing is written, ``None`` is returned, and the rule decides.

* ``decide_as_written`` — decide on the request's row as this process wrote it
  (``signoff.kernel.written_requests``) or as read with its approver in one statement, without
  holding its lock: one statement whose compare-and-set requires both unchanged.
* ``propose_unread`` — take a thread this process has not read for one with no memory
  (no mode, rejections, grants or pending calls) and create the request only if the
  thread truly has none, in the same statement.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from signoff.errors import Conflict, SignoffError
from signoff.identity import Identity
from signoff.kernel.outcomes import Proposal
from signoff.kernel.ownership import refusal
from signoff.kernel.written_requests import ARGS_MAX
from signoff.model import (
    ApprovalRequest,
    ApproveScope,
    Decision,
    DecisionKind,
    RequestStatus,
    ReviewMode,
    RunContext,
    ToolCall,
)

if TYPE_CHECKING:
    from signoff.kernel.deciding import Asked, Decider, DecisionResult
    from signoff.kernel.proposing import Proposer


def may_go_unread(decision: Decision) -> bool:
    """A decision that reads nothing but its request's row and its approver: neither an
    edit (re-validated against the policy) nor a standing scope (it reads the thread)."""
    return decision.kind is not DecisionKind.EDIT and decision.scope is ApproveScope.ONCE


# ---- deciding ---------------------------------------------------------------------------------

def decide_as_written(decider: Decider, asked: Asked) -> DecisionResult | None:
    """``decide`` without the row lock: on the row as this process wrote it, else — a row
    written elsewhere (another server) — on the row and the approver read in one
    statement outside any transaction; the write's guard checks inside PostgreSQL that
    both are still as read. ``None``: the rule decides."""
    request = decider.written.take(asked.request_id)
    signer = asked.identity
    if request is None and may_go_unread(asked.decision):
        request, current = decider.store.request_and_user(asked.request_id,
                                                          asked.identity.name)
        if current is None or not current.may_decide:
            return None  # the locked path says why
        signer = current
    if request is None or asked.edited is not None:
        return None
    return _apply_as_written(decider, request, asked, signer)


def _apply_as_written(decider: Decider, request: ApprovalRequest, asked: Asked,
                    identity: Identity) -> DecisionResult | None:
    """The decision on ``request`` as known here and ``identity`` as it signs (as read with
    the row): one statement on PostgreSQL, whose compare-and-set requires the row and the
    approver to be as known. Only where that row is all the decision reads: a quorum of
    one and no role quorum (so it has no decision yet, and this one moves it), approved
    once, rejected or answered, before its expiry, and by someone the rules let decide
    it. ``None``: not such a decision, or the row or the approver was not as known
    (nothing written)."""
    decision, now, key = asked.decision, asked.now, asked.key
    if (request.status is not RequestStatus.PENDING or request.approvals_required != 1
            or request.requires or request.passkey or not may_go_unread(decision)
            or len(request.args) + len(request.approved_args or "") > ARGS_MAX
            or (request.expires_at is not None and now >= request.expires_at)
            or decision.expected_args_hash not in (None, request.run_hash)
            or refusal(request, identity) is not None):
        return None
    try:
        with decider.store.transaction() as tx:
            tx.expect_as_known(request, identity)
            result = decider.apply(tx, request, decision, edited=None, identity=identity,
                                   now=now, via=asked.via)
            if key is not None:  # a key used before clashes: the locked path replays it
                tx.put_idempotent_response(key, request_id=request.id, body_hash=asked.body,
                                           response=json.dumps(result.to_dict()), at=now)
            tx.notify(request.id)
    except Conflict as exc:
        if exc.code in ("changed_underneath", "unique_violation"):
            return None
        raise
    return result


# ---- proposing --------------------------------------------------------------------------------

def propose_unread(proposer: Proposer, call: ToolCall, context: RunContext | None,
                   evidence: Sequence[str], *, agent: str | None = None) -> Proposal | None:
    """``propose`` on a thread whose memory is taken for empty, unread (a round trip less),
    if ``unread_thread`` allows; ``None``: the rule proposes (reading it)."""
    thread = unread_thread(proposer, context)
    if thread is None:
        return None
    with proposer.store.assuming_no_thread_memory(thread):
        try:
            return proposer.judge(call, context, evidence, assumed=thread, agent=agent)
        except SignoffError:  # judged on the memory read instead: the answer it
            return None       # gives is the one that counts, refusals included


def unread_thread(proposer: Proposer, context: RunContext | None) -> str | None:
    """The thread whose memory a proposal may take for empty without reading it: one
    this process does not remember, on a store whose writes can require it
    (PostgreSQL: a round trip less), in manual review — so the evaluation asks no
    reviewer, and does nothing it would have to take back."""
    if not proposer.store.guards_unread or context is None or not context.thread_id:
        return None
    mode = context.review_mode or proposer.policy.config.default_review_mode
    if mode is not ReviewMode.MANUAL:
        return None
    if proposer.store.remembered_thread_memory(context.thread_id) is not None:
        return None  # remembered: no read to spare
    return context.thread_id
