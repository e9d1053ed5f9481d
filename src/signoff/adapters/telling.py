"""What the model is told about a call that did not run as it asked, in every framework.

A rejection (with the approver's reason and alternatives) and each way a request can end
without running here — expired, withdrawn, invalidated, a run that died, a failure, a run
elsewhere — read the same to the model whichever adapter answers; each adapter wraps the
text in its framework's tool result (an error ToolMessage, a dict, a function result).
"""

from __future__ import annotations

from signoff.kernel.outcomes import Outcome, OutcomeKind


def rejected(outcome: Outcome) -> str:
    """A rejection: the reviewer's reason, the alternatives they offered, and not to retry."""
    text = f"Rejected by a human reviewer: {outcome.reason or 'no reason given'}."
    if outcome.alternatives:
        text += " Alternatives you may use instead: " + "; ".join(outcome.alternatives) + "."
    return text + " Do not retry the same call."


def not_run(outcome: Outcome) -> str:
    """Why a decided request did not run here (any end but approved, rejected, answered)."""
    kind = outcome.kind
    withdrawn = "The request was withdrawn before it ran"
    reasons = {
        OutcomeKind.EXPIRED: "No reviewer decided before the request expired; it did not run.",
        OutcomeKind.CANCELLED: f"{withdrawn}: {outcome.reason}." if outcome.reason
        else f"{withdrawn}.",
        OutcomeKind.INVALIDATED: f"The approved call no longer holds ({outcome.code}: "
                                 f"{outcome.reason}); it did not run. Propose it again if it is "
                                 "still needed.",
        OutcomeKind.UNKNOWN: "The call started but its run died; whether it took effect is "
                             "unknown and it will not be re-run. Check before retrying.",
        OutcomeKind.FAILED: f"The call ran and failed: {outcome.error}",
        OutcomeKind.EXECUTING: "The call is running elsewhere; its result is not known here.",
    }
    return reasons.get(kind, f"The call did not run ({kind.value}).")
