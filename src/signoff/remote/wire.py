"""The HTTP API's JSON read back into ``signoff.model`` types, for ``signoff.remote``:
a remote gate answers with the very types an in-process ``Gate`` does
(``signoff.kernel.protocol``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signoff.kernel.bulk import BulkResult, Refused, Shape
from signoff.kernel.deciding import DecisionResult
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.model import (
    ApprovalRequest,
    Effect,
    InteractionMode,
    Reason,
    RequestStatus,
    ReviewMode,
    Risk,
    Step,
    ToolCall,
    Verdict,
)


def outcome_of(data: Mapping[str, Any]) -> Outcome:
    """An ``Outcome`` from the API's ``Outcome`` body."""
    return Outcome(kind=OutcomeKind(data["kind"]), request_id=data.get("request_id"),
                   result=data.get("result"), error=data.get("error"),
                   code=data.get("code"), reason=data.get("reason"),
                   alternatives=tuple(data.get("alternatives") or ()),
                   message=data.get("message"), args=data.get("args") or {})


def verdict_of(data: Mapping[str, Any], call: ToolCall) -> Verdict:
    """A ``Verdict`` from the API's ``Verdict`` body for ``call``: what the body does not
    show (its source, decision id, interaction mode…) is the call's or left unsaid."""
    reasons = tuple(
        Reason(step=Step(r["step"]), text=str(r.get("text") or ""), rule=r.get("rule"),
               effect=Effect(r["effect"]) if r.get("effect") else None, code=r.get("code"))
        for r in data.get("reasons") or ())
    return Verdict(
        effect=Effect(data["effect"]), code=str(data["code"]), message=str(data["message"]),
        reasons=reasons, risk=Risk(data["risk"]), source=str(data.get("source") or ""),
        policy_version=str(data["policy_version"]),
        decision_id=str(data.get("decision_id") or ""),
        call_id=call.id, tool=call.name, args_hash=data.get("args_hash"),
        review_mode=ReviewMode(data["review_mode"]),
        interaction_mode=InteractionMode(data.get("interaction_mode") or "interactive"),
        roles=tuple(data.get("roles") or ()), approvals=int(data.get("approvals") or 1),
        expires_in=data.get("expires_in"), mandatory=bool(data.get("mandatory")),
        passkey=bool(data.get("passkey")),
        grant_id=data.get("grant_id"))


def request_of(data: Mapping[str, Any]) -> ApprovalRequest:
    """An ``ApprovalRequest`` from the API's ``Request`` body: the fields the API shows (the
    canonical texts byte for byte, so hashes still match; a single request's ``changes``);
    what it does not show — results, leases, fencing tokens — stays unset."""
    return ApprovalRequest(
        id=str(data["id"]), call_id=str(data["call_id"]), tool=str(data["tool"]),
        args=str(data["args_canonical"]), args_hash=str(data["args_hash"]),
        status=RequestStatus(data["status"]), risk=Risk(data["risk"]),
        summary=str(data["summary"]), policy_version=str(data["policy_version"]),
        created_at=float(data["created_at"]), updated_at=float(data["created_at"]),
        thread_id=data.get("thread_id"), run_id=data.get("run_id"),
        principal=data.get("principal"), agent=data.get("agent"),
        description=data.get("description"), expected_effect=data.get("expected_effect"),
        roles=tuple(data.get("roles") or ()),
        approvals_required=int(data.get("approvals_required") or 1),
        expires_at=data.get("expires_at"), review=data.get("review"),
        requires=tuple((str(role), int(n)) for role, n in data.get("requires") or ()),
        passkey=bool(data.get("passkey")),
        approved_args=data.get("approved_args_canonical"),
        approved_hash=data.get("approved_hash"), outcome_code=data.get("outcome_code"),
        outcome_reason=data.get("outcome_reason"),
        changes=tuple(data.get("changes") or ()))


def bulk_result_of(data: Mapping[str, Any]) -> BulkResult:
    """A ``BulkResult`` from the API's ``BulkDecisionResult`` body: its shape, each decision
    with its request as the decision left it, and each refusal."""
    parts = data.get("shape_parts")
    shape = None if parts is None else Shape(
        str(parts["tool"]), tuple(str(k) for k in parts["keys"]),
        tuple(str(c) for c in parts["commands"]))
    decided = tuple(
        DecisionResult(request=request_of(d["request"]), decision_id=str(d["decision_id"]),
                       approvals=int(d["approvals"]), required=int(d["required"]),
                       transitioned=bool(d["transitioned"]), replayed=bool(d["replayed"]),
                       review_mode=d.get("review_mode"),
                       also_approved=tuple(d.get("also_approved") or ()))
        for d in data["decisions"])
    refused = tuple(Refused(str(r["request_id"]), str(r["code"]), str(r["message"]))
                    for r in data["refused"])
    return BulkResult(shape, decided, refused)
