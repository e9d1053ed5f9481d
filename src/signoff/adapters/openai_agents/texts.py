"""What the model reads back when a gated call did not run as proposed: a denial, a
rejection with its reason and alternatives, an approver's answer, a request withdrawn or
no longer valid — plain tool-output text, so the run goes on and the model can act on it."""

from __future__ import annotations

import json
from typing import Any

from signoff.adapters import telling
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.model import Verdict

NOTE = "[signoff]"
NO_THREAD = (f"{NOTE} This call was not run: the run has no signoff thread id (pass "
             "gate_agent(thread_id=...) or a mapping context with 'signoff_thread_id'), so an "
             "approval could not be matched to it.")
OUTSIDE = (f"{NOTE} This call was approved in the run state but not in signoff, where it still "
           "waits for a decision; it was not run. Approvals count only when people give them "
           "in signoff.")


def refused(verdict: Verdict) -> str:
    """A denial or a block: the policy's message, as the tool's output."""
    return f"{NOTE} The call was not run ({verdict.effect.value}: {verdict.code}): " \
           f"{verdict.message}"


def of_outcome(outcome: Outcome) -> str:
    """A decided request that does not run here: rejected, answered, withdrawn, …"""
    kind = outcome.kind
    if kind is OutcomeKind.REJECTED:
        return f"{NOTE} {telling.rejected(outcome)}"
    if kind is OutcomeKind.RESPONDED:
        return outcome.message or ""
    if kind is OutcomeKind.EXECUTED:  # it ran before (a replayed resume): its recorded result
        return with_note(result_text(outcome.result), edit_note(outcome.reason)
                         if outcome.code == "edited" else None)
    reasons = {
        OutcomeKind.DENIED: f"The call was denied: {outcome.message or outcome.reason}",
        OutcomeKind.BLOCKED: f"The call needs a human and this run cannot ask one: "
                             f"{outcome.message or outcome.reason}",
    }
    return f"{NOTE} " + reasons.get(kind, telling.not_run(outcome))


def edit_note(reason: str | None) -> str:
    why = f": {reason}" if reason else ""
    return f"{NOTE} A human reviewer edited this call's arguments before it ran{why}"


def with_note(text: str, note: str | None) -> str:
    return text if note is None else f"{text}\n{note}" if text else note


def result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


# A hosted MCP tool's approval carries no arguments: the provider runs the ones it proposed.
HOSTED_OTHER_ARGS = (f"{NOTE} This call was not approved: the arguments of its approval request "
                     "in the run state are not the ones people approved.")


def hosted_edit(reason: str | None) -> str:
    """An approver's edit of a hosted MCP call: it cannot be applied, so nothing runs."""
    why = f" ({reason})" if reason else ""
    return (f"{NOTE} A human reviewer edited this call's arguments{why}, but a hosted MCP tool "
            "can only run the arguments its provider proposed, so the edit could not be "
            "applied and the call was not run. Propose the edited call if it is still needed.")


def hosted_answered(outcome: Outcome) -> str:
    """A hosted MCP call whose approval signoff already sent once (a replayed run state)."""
    return (f"{NOTE} This call was already answered through signoff (request "
            f"{outcome.request_id}, {outcome.kind.value}); it is not approved a second time.")
