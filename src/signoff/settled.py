"""How a request that no longer waits was settled: what, by whom, when, and what the
approver said — the line the inbox and ``signoff requests show`` print instead of an
expiry (an expiry means nothing once nobody is asked any more)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from signoff.model import ApprovalRequest, DecisionKind, DecisionRecord, RequestStatus
from signoff.times import shown

_DONE = {DecisionKind.APPROVE: "approved", DecisionKind.REJECT: "rejected",
         DecisionKind.EDIT: "approved with edited arguments",
         DecisionKind.RESPOND: "answered without running"}

_BY_STATUS = {RequestStatus.REJECTED: DecisionKind.REJECT,
              RequestStatus.RESPONDED: DecisionKind.RESPOND}


@dataclass(frozen=True, slots=True)
class Settled:
    what: str  # "rejected", "approved", "expired", …
    at: float
    by: str | None = None
    reason: str | None = None  # the approver's reason, or the message of a response
    alternatives: tuple[str, ...] = ()

    def line(self) -> str:
        """``rejected by alice, 2026-12-06 08:12 UTC``."""
        return f"{self.what}{f' by {self.by}' if self.by else ''}, {shown(self.at)}"


def settled(request: ApprovalRequest, decisions: Sequence[DecisionRecord]) -> Settled | None:
    """``None`` while the request is pending; else how it was settled."""
    if request.status is RequestStatus.PENDING:
        return None
    if request.status is RequestStatus.EXPIRED:
        return Settled("expired unanswered", request.expires_at or request.updated_at)
    if request.status is RequestStatus.CANCELLED:
        return Settled("cancelled", request.updated_at, reason=request.outcome_reason)
    wanted = _BY_STATUS.get(request.status)  # else the last decision (approve, edit)
    final = [d for d in decisions if wanted is None or d.kind is wanted]
    if not final:  # settled without a human decision (a grant, a reviewer, a re-check)
        return Settled(request.status.value, request.updated_at, reason=request.outcome_reason)
    last = max(final, key=lambda d: d.created_at)
    return Settled(_DONE[last.kind], last.created_at, by=last.approver,
                   reason=last.reason or last.message, alternatives=tuple(last.alternatives))
