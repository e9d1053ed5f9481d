"""What the gate answers: a ``Proposal`` when a call is proposed, an ``Outcome`` when it resumes.

Both carry a ``kind`` tag. A rejection is data (``reason``, ``alternatives``)
the agent can act on, never a bare error string. The exceptions at the end
are what ``@gate.tool`` functions raise when their call did not run: control
flow for plain-Python callers, kept apart from ``SignoffError``.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from signoff.model import ApprovalRequest, RequestStatus, Verdict


class ProposalKind(enum.StrEnum):
    ALLOWED = "allowed"
    DENIED = "denied"
    BLOCKED = "blocked"
    PENDING = "pending"
    DECIDED = "decided"  # this call id already has a request that was decided: resume() it


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    kind: ProposalKind
    verdict: Verdict
    request: ApprovalRequest | None = None

    @property
    def request_id(self) -> str | None:
        return self.request.id if self.request else None


class OutcomeKind(enum.StrEnum):
    EXECUTED = "executed"  # the tool ran and returned (result)
    FAILED = "failed"  # the tool ran and raised (error)
    DENIED = "denied"  # the policy denied it; it never became a request
    BLOCKED = "blocked"  # it needs a human and this run cannot ask one
    PENDING = "pending"  # still waiting for decisions
    APPROVED = "approved"  # approved; no tool here to run it: claim() and report()
    EXECUTING = "executing"  # someone else holds the claim right now
    REJECTED = "rejected"  # reason and alternatives from the approver
    RESPONDED = "responded"  # the approver answered instead of running the tool
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    INVALIDATED = "invalidated"  # re-validation failed: code says why; re-propose if still wanted
    UNKNOWN = "unknown"  # a run died mid-call; reconciliation needed, never re-run


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    kind: OutcomeKind
    request_id: str | None = None
    result: Any = None
    error: str | None = None
    code: str | None = None
    reason: str | None = None
    alternatives: tuple[str, ...] = ()
    message: str | None = None
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.kind not in (OutcomeKind.PENDING, OutcomeKind.APPROVED,
                                 OutcomeKind.EXECUTING)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "request_id": self.request_id,
                "result": _jsonable(self.result), "error": self.error, "code": self.code,
                "reason": self.reason, "alternatives": list(self.alternatives),
                "message": self.message, "args": self.args}


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


class CallNotRun(Exception):
    """Raised by a ``@gate.tool`` function whose call did not run; ``outcome`` says why."""

    def __init__(self, outcome: Outcome) -> None:
        text = outcome.message or outcome.reason or outcome.error or outcome.kind.value
        super().__init__(f"{outcome.kind.value}: {text}")
        self.outcome = outcome


class Denied(CallNotRun):
    """The policy denied the call, or re-validation invalidated it."""


class Rejected(CallNotRun):
    """A human rejected the call; ``outcome.reason`` and ``outcome.alternatives`` say why."""


class Blocked(CallNotRun):
    """The call needs a human and this run may not wait for one."""


class StillPending(CallNotRun):
    """The wait timed out; ``outcome.request_id`` names the request to resume later."""


class Responded(CallNotRun):
    """The approver answered instead of running the tool: ``outcome.message``."""


def outcome_of(request: ApprovalRequest) -> Outcome:
    """The outcome a request's current state means for the agent."""
    status = request.status
    base: dict[str, Any] = {"request_id": request.id}
    # An approver's edit (code "edited") travels with the call that runs: the agent reads
    # the editor's reason beside the result.
    edit: dict[str, Any] = {"code": "edited", "reason": request.outcome_reason} \
        if request.outcome_code == "edited" else {}
    if status is RequestStatus.SUCCEEDED:
        return Outcome(kind=OutcomeKind.EXECUTED, result=load_result(request.result), **base,
                       **edit)
    if status is RequestStatus.FAILED:
        return Outcome(kind=OutcomeKind.FAILED, error=request.error,
                       result=load_result(request.result), code=request.outcome_code,
                       reason=request.outcome_reason, **base)
    if status is RequestStatus.REJECTED:
        return Outcome(kind=OutcomeKind.REJECTED, reason=request.outcome_reason,
                       alternatives=request.alternatives, code="rejected",
                       message="A human rejected this call. Do not retry the same call.", **base)
    if status is RequestStatus.RESPONDED:
        return Outcome(kind=OutcomeKind.RESPONDED, message=request.response, **base)
    if status is RequestStatus.APPROVED:
        return Outcome(kind=OutcomeKind.APPROVED, args=json.loads(request.run_args), **base,
                       **edit)
    kinds = {RequestStatus.PENDING: OutcomeKind.PENDING,
             RequestStatus.EXECUTING: OutcomeKind.EXECUTING,
             RequestStatus.EXPIRED: OutcomeKind.EXPIRED,
             RequestStatus.CANCELLED: OutcomeKind.CANCELLED,
             RequestStatus.INVALIDATED: OutcomeKind.INVALIDATED,
             RequestStatus.UNKNOWN: OutcomeKind.UNKNOWN}
    return Outcome(kind=kinds[status], code=request.outcome_code,
                   reason=request.outcome_reason, **base)


def load_result(text: str | None) -> Any:
    """A stored result back as the value the tool returned (JSON)."""
    return None if text is None else json.loads(text)
