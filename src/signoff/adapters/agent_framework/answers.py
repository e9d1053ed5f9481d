"""What the model reads back when a call did not run as proposed: plain text, never an
exception that would end the run, always marked as signoff's."""

from __future__ import annotations

import json
from typing import Any

from signoff.adapters import telling
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
        return f"{NOTE} {telling.rejected(outcome)}"
    if kind is OutcomeKind.RESPONDED:
        return outcome.message or ""
    if kind is OutcomeKind.EXECUTED:
        return (f"{NOTE} This approved call already ran (request {outcome.request_id}); it was "
                f"not run again. Its result: {_text(outcome.result)}")
    return f"{NOTE} {telling.not_run(outcome)}"


def _text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
