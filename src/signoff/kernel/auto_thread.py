"""Auto-approve this thread: the approval card's second button.

One decision, one transaction: the request is approved (a vote like *Approve
once*), the thread's review mode becomes ``auto`` (a higher one stays), and the
other calls of the same pause that the card *listed* — ``Decision.listed``, each
request id with the arguments hash the approver was shown — are approved by the
same approver, so one resume runs them all. An approval counts only for what the
human saw: a call proposed after the card was rendered is not listed, a listed
call whose arguments changed since has another hash, and a call of another run
or another asker (principal or agent) is not of this pause — all stay with
humans. No list approves the request alone.
The checks are those of setting the mode by hand: the ceiling and no call
executing (``kernel.admin.mode_change_refusal``), and no party of the thread
(``kernel.ownership``).
Kept as they are too: a request with any decision (a reject or an edit already
given, a first vote of a quorum), a mandatory one (the policy wants a human to
look at that call), one this approver may not decide, one whose time is up.

The mode applies to the run that waited: it takes it when it resumes (the store
records the waiting run with the mode; ``adapters.langchain.run.refixed``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from signoff.audit import AuditKind, to_us
from signoff.errors import InvalidDecision
from signoff.identity import Identity
from signoff.kernel.accounts import mode_change_refusal
from signoff.kernel.ownership import decision_refusal
from signoff.model import ApprovalRequest, ApproveScope, Decision, ReviewMode
from signoff.policy.modes import parse_review_mode
from signoff.store.base import Tx

if TYPE_CHECKING:
    from signoff.kernel.deciding import DecisionResult


def may_switch(tx: Tx, request: ApprovalRequest, ceiling: ReviewMode) -> None:
    """Refuse before anything is written: ``no_thread``, ``above_ceiling``,
    ``run_in_progress``."""
    if not request.thread_id:
        raise InvalidDecision(f"request {request.id} belongs to no thread: approve it once "
                              "or for this thread", code="no_thread")
    refused = mode_change_refusal(tx, request.thread_id, ReviewMode.AUTO, ceiling)
    if refused is not None:
        raise refused


def same_pause(request: ApprovalRequest, other: ApprovalRequest) -> bool:
    """``other`` waits in the same pause as ``request``: the same run, asked by the same
    principal and agent. The card lists only these, and the kernel approves no other."""
    return (other.thread_id == request.thread_id and other.run_id == request.run_id
            and other.principal == request.principal and other.agent == request.agent)


def switch(tx: Tx, result: DecisionResult, identity: Identity, now: float,
           default: ReviewMode, *, listing: Iterable[tuple[str, str]],
           refused: Callable[[ApprovalRequest], object],
           vote: Callable[[ApprovalRequest], object]) -> DecisionResult:
    """After the request's own vote: set the mode, then ``vote`` on each other request
    of the pause that the card listed (``listing``: (id, arguments hash) pairs) with the
    hash it still has and that may take one (``refused``: why this approver may not
    decide it at all, or a falsy value). Returns ``result`` with the mode and those ids."""
    request = result.request
    thread = request.thread_id
    assert thread is not None  # may_switch
    stored = tx.thread_mode(thread)
    current = parse_review_mode(stored) if stored else default
    mode = current if current.rank >= ReviewMode.AUTO.rank else ReviewMode.AUTO
    if mode is not current or stored is None:
        # The run waiting is the request's own: just approved, it is no longer pending,
        # and it may have been the pause's only request.
        tx.set_thread_mode(thread, mode.value, at=now, by=identity.name,
                           waiting_run=request.run_id)
        tx.append_audit(AuditKind.THREAD_MODE, at_us=to_us(now), request_id=request.id,
                        actor=identity.name, data={
                            "thread_id": thread, "review_mode": mode.value,
                            "decision_id": result.decision_id, "via": "auto_thread"})
    listed = set(listing)
    approved: list[str] = []
    if not listed:
        return dataclasses.replace(result, review_mode=mode.value, also_approved=())
    probe = Decision.approve(scope=ApproveScope.AUTO_THREAD)
    parties = tx.thread_parties(thread)
    for other in tx.pending_to_hold(thread, request.id):
        if ((other.id, other.run_hash) not in listed or not same_pause(request, other)
                or other.mandatory or other.passkey or refused(other)
                or decision_refusal(other, identity.name, probe, parties) is not None
                or (other.expires_at is not None and now >= other.expires_at)
                or tx.decisions(other.id)):
            continue
        vote(other)
        tx.notify(other.id)
        approved.append(other.id)
    return dataclasses.replace(result, review_mode=mode.value, also_approved=tuple(approved))
