"""What the model reads back from a gated call: ADK function-response dicts.

ADK hands whatever a ``before_tool_callback`` returns to the model as the call's response,
so every way a call does not run — denied, blocked, rejected, expired, a refused id — is a
dict the model can act on (``error`` and signoff's ``signoff`` details), never an exception
that ends the run. A call that waits for people answers with a placeholder marked
``PENDING_KEY``: the pause's own response, which the resume replaces.
"""

from __future__ import annotations

import json
from typing import Any

from signoff.adapters import telling
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.model import ApprovalRequest, Verdict

NOTE = "[signoff]"
PENDING_KEY = "signoff_pending"  # the placeholder response of a paused call: its request id


def refused(verdict: Verdict) -> dict[str, Any]:
    """A denial or a block, as an error the model can act on."""
    return {"error": verdict.message,
            "signoff": {"effect": verdict.effect.value, "code": verdict.code}}


def refused_id(call_id: str | None, why: str, code: str) -> dict[str, Any]:
    """A call whose id cannot be bound to one decision: it did not run."""
    return {"error": f"{NOTE} This tool call ({call_id!r}) has {why}; it did not run. Call it "
                     "again with a new, unique id if it is needed.",
            "signoff": {"code": code}}


def pending(request: ApprovalRequest) -> dict[str, Any]:
    """The placeholder a paused call answers with until people decide."""
    return {PENDING_KEY: request.id, "status": "waiting for approval",
            "message": f"{NOTE} This call waits for a human decision (request {request.id}); "
                       "it has not run."}


def result(value: Any, note: str | None = None) -> dict[str, Any]:
    """A tool's return value as ADK shapes it (a dict as is, anything else under
    ``result``), with the note on an approver's edit."""
    shaped = dict(value) if isinstance(value, dict) else {"result": value}
    if note is not None:
        shaped["signoff_note"] = note
    return shaped


def failed(error: BaseException) -> dict[str, Any]:
    return {"error": f"The call failed: {type(error).__name__}: {error}"}


def edit_note(outcome: Outcome, args: dict[str, Any]) -> str | None:
    """What the model is told when an approver changed the call's arguments, and why: the
    history keeps the model's own arguments (ADK checks a confirmation against them), so
    the response says what ran."""
    if outcome.code != "edited":
        return None
    why = f": {outcome.reason}" if outcome.reason else ""
    return (f"{NOTE} A human reviewer edited this call's arguments before it ran{why}. "
            f"It ran with {json.dumps(args, ensure_ascii=False, sort_keys=True)}.")


def from_outcome(outcome: Outcome) -> dict[str, Any]:
    """A decided request that did not run here: rejected, responded, expired, already run…"""
    kind = outcome.kind
    details: dict[str, Any] = {"request_id": outcome.request_id, "outcome": kind.value}
    if kind is OutcomeKind.REJECTED:
        return {"error": telling.rejected(outcome), "signoff": {**details, "reason": outcome.reason,
                                           "alternatives": list(outcome.alternatives)}}
    if kind is OutcomeKind.RESPONDED:
        return {"result": outcome.message or "", "signoff": details}
    if kind is OutcomeKind.EXECUTED:  # it ran before (a replayed resume): its stored result
        return {**result(outcome.result), "signoff": {
            **details, "note": f"{NOTE} This approved call already ran; it was not run again."}}
    reasons = {
        OutcomeKind.PENDING: "The run was resumed before this call was decided; the request "
                             "was withdrawn and the call did not run. Propose it again if it "
                             "is still needed.",
    }
    return {"error": reasons.get(kind, telling.not_run(outcome)),
            "signoff": {**details, "code": outcome.code}}
