"""What the model reads back when a call did not run as proposed: plain text, never an
exception that would end the run, always marked as signoff's."""

from __future__ import annotations

import json
from typing import Any

from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.model import Verdict

NOTE = "[signoff]"


def refused(verdict: Verdict) -> str:
    """A denial or a block: the verdict's message (the model can act on it)."""
    return f"{NOTE} {verdict.effect.value}: {verdict.message}"


def bad_call(reason: str) -> str:
    return f"{NOTE} This call was not run: {reason}"


def from_outcome(outcome: Outcome) -> str:
    """A decided request that did not run here: rejected, answered, expired, …"""
    kind = outcome.kind
    if kind is OutcomeKind.REJECTED:
        text = f"{NOTE} Rejected by a human reviewer: {outcome.reason}."
        if outcome.alternatives:
            text += " Alternatives you may use instead: " + "; ".join(outcome.alternatives) + "."
        return text + " Do not retry the same call."
    if kind is OutcomeKind.RESPONDED:
        return outcome.message or ""
    if kind is OutcomeKind.EXECUTED:
        return (f"{NOTE} This approved call already ran (request {outcome.request_id}); it was "
                f"not run again. Its result: {_text(outcome.result)}")
    reasons = {
        OutcomeKind.EXPIRED: "No reviewer decided before the request expired; it did not run.",
        OutcomeKind.CANCELLED: "The request was withdrawn before it ran"
                               + (f": {outcome.reason}." if outcome.reason else "."),
        OutcomeKind.INVALIDATED: f"The approved call no longer holds ({outcome.code}: "
                                 f"{outcome.reason}); it did not run. Propose it again if it "
                                 "is still needed.",
        OutcomeKind.UNKNOWN: "The call started but its run died; whether it took effect is "
                             "unknown and it will not be re-run. Check before retrying.",
        OutcomeKind.FAILED: f"The call ran and failed: {outcome.error}",
        OutcomeKind.EXECUTING: "The call is running elsewhere; it was not run again here.",
    }
    return f"{NOTE} " + reasons.get(kind, f"The call did not run ({kind.value}).")


def _text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
