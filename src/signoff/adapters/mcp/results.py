"""The tool results a model reads when signoff, not the server, answers a call.

Every one is an MCP ``CallToolResult`` with ``isError: true`` (except an
approver's answer instead of the tool, which is the call's result): a model
reads the text and can act on it — choose another path, wait, ask the user.
``_meta.signoff`` carries the same facts for programs: the effect or outcome,
its stable code and the approval request's id.
"""

from __future__ import annotations

from typing import Any

from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.model import ApprovalRequest, Effect, Verdict


def error_result(text: str, *, code: str, request_id: str | None = None,
                 kind: str = "error") -> dict[str, Any]:
    meta: dict[str, Any] = {"outcome": kind, "code": code}
    if request_id is not None:
        meta["request_id"] = request_id
    return {"content": [{"type": "text", "text": text}], "isError": True,
            "_meta": {"signoff": meta}}


def stopped_result(request: ApprovalRequest, why: str, *, inbox: str | None
                   ) -> dict[str, Any]:
    """An asked call still waiting when the proxy stopped: it has not run, and its request
    stays pending."""
    where = f" in the inbox ({inbox})" if inbox else ""
    text = (f"{why[:1].upper()}{why[1:]} before a human decided: request {request.id} is "
            f"still waiting{where}, and the call has not run. Call the tool again with the "
            "same arguments once the proxy is back to pick up the decision, or carry on "
            "without it.")
    return error_result(text, code="proxy_stopped", request_id=request.id, kind="pending")


def refusal_result(verdict: Verdict) -> dict[str, Any]:
    """A denied or blocked verdict: its message is written for the model."""
    kind = "denied" if verdict.effect is Effect.DENY else "blocked"
    return error_result(verdict.message, code=verdict.code, kind=kind)


def outcome_result(outcome: Outcome, request: ApprovalRequest, *, waited: float,
                   inbox: str | None) -> dict[str, Any]:
    """An asked call that did not run: why, in words a model can act on."""
    rid = request.id
    kind = outcome.kind
    if kind is OutcomeKind.RESPONDED:
        return {"content": [{"type": "text", "text": outcome.message or ""}], "isError": False,
                "_meta": {"signoff": {"outcome": "responded", "code": "responded",
                                      "request_id": rid}}}
    if kind is OutcomeKind.REJECTED:
        text = "A human rejected this call"
        text += f": {outcome.reason.rstrip('.')}." if outcome.reason else "."
        if outcome.alternatives:
            text += " They suggest instead: " + "; ".join(outcome.alternatives) + "."
        text += " Do not retry the same call."
    elif kind is OutcomeKind.PENDING:
        where = f" in the inbox ({inbox})" if inbox else ""
        text = (f"This call needs a human's approval: request {rid} is waiting{where}. No "
                f"decision came within {waited:g} s, so it has not run. Call the tool again "
                "with the same arguments later to pick up the decision, or carry on without it.")
    elif kind is OutcomeKind.EXPIRED:
        text = f"Approval request {rid} expired before anyone decided it; the call did not run."
    elif kind is OutcomeKind.CANCELLED:
        text = f"Approval request {rid} was withdrawn; the call did not run."
    elif kind is OutcomeKind.INVALIDATED:
        text = (f"The approved call was not run: {outcome.reason or outcome.code}. Propose it "
                "again if it is still wanted.")
    elif kind is OutcomeKind.EXECUTING:
        text = f"Approval request {rid} is being run elsewhere; this call does not run it again."
    elif kind is OutcomeKind.UNKNOWN:
        text = (f"Approval request {rid} ran but its outcome is unknown; signoff does not run "
                "it again.")
    elif kind is OutcomeKind.EXECUTED:
        text = f"Approval request {rid} already ran: {outcome.result!r}"[:4000]
    elif kind is OutcomeKind.FAILED:
        text = f"Approval request {rid} already ran and failed: {outcome.error}"
    else:
        text = f"Approval request {rid}: {kind.value}."
    return error_result(text, code=outcome.code or kind.value, request_id=rid, kind=kind.value)
