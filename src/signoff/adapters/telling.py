"""What the model is told about a call that did not run as it asked, in every framework.

A rejection (with the approver's reason and alternatives) and each way a request can end
without running here — expired, withdrawn, invalidated, a run that died, a failure, a run
elsewhere — read the same to the model whichever adapter answers; each adapter wraps the
text in its framework's tool result (an error ToolMessage, a dict, a function result), and
so does an approver's edit beside the edited call's result. A run nobody will answer (full
review mode, an unattended run) is told so in its system prompt, in the same words
everywhere.
"""

from __future__ import annotations

from signoff.kernel.outcomes import Outcome, OutcomeKind

# An unattended run uses the context it has, makes minimal reversible assumptions
# and lists them — or returns a structured BLOCKED result naming the missing decision; it is
# never told to carry out an ambiguous, high-risk action regardless.
BLOCKED_OPTION = ("If high-risk or irreversible work lacks the authorization or the "
                  "information it needs, do not do it: stop and answer "
                  "'BLOCKED: <the missing decision>'.")
FULL_MODE_NOTE = ("You are running without a human to ask: do not ask clarifying questions. "
                  "Use the context you have; where something is unclear, make minimal, "
                  "reversible assumptions and list them in your answer. " + BLOCKED_OPTION)


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


def edited(reason: str | None) -> str:
    """Beside an edited call's result: the approver changed its arguments, and why."""
    return "A human reviewer edited this call's arguments before it ran" + (
        f": {reason}" if reason else ".")
