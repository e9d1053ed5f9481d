"""What the model reads when a call did not run as proposed: one sentence per outcome.

Every answer here becomes a failed tool return (Pydantic AI's ``ToolFailed``): the model
sees it and adapts, the run goes on, and no retry budget is spent on a call a policy or a
person refused. A rejection carries the approver's reason and alternatives, never a bare
error.
"""

from __future__ import annotations

import json
from typing import Any

from signoff.adapters import telling
from signoff.kernel.outcomes import Outcome, OutcomeKind

NOTE = "[signoff]"
ARGS_CHANGED = (f"{NOTE} This call was resumed with other arguments than the ones a human "
                "reviewed (override_args); it did not run. An approver's edit is made in "
                "signoff, not in the resume.")
BAD_ID = (f"{NOTE} This tool call has {{why}}, so it cannot be bound to a decision; it did not "
          "run. Call it again with a unique id if it is needed.")
REUSED_ID = (f"{NOTE} This tool call's id was already used in this thread for another call; "
             "it did not run. Call it again with a new id if it is needed. ({message})")
UNSEEN = (f"{NOTE} Part of this call's arguments has no faithful JSON form (a field "
          "excluded from serialization, or a value JSON cannot carry), so nobody could "
          "review what the tool would receive; it did not run.")
SUBAGENT_WAITED = (f"{NOTE} No reviewer decided within {{seconds:g}} s while this subagent "
                   "waited; the request was withdrawn and the call did not run.")


def not_run(outcome: Outcome) -> str:
    """The model's answer for a decided request that does not run here."""
    kind = outcome.kind
    if kind is OutcomeKind.REJECTED:
        return telling.rejected(outcome)
    reasons = {
        OutcomeKind.DENIED: outcome.message or "The policy denied this call.",
        OutcomeKind.BLOCKED: outcome.message or "This call needs a human and none can be asked.",
    }
    return f"{NOTE} " + reasons.get(kind, telling.not_run(outcome))


def edit_note(outcome: Outcome) -> str | None:
    """What the model is told when an approver changed the call's arguments, and why."""
    if outcome.code != "edited":
        return None
    why = f": {outcome.reason}" if outcome.reason else ""
    ran = (f" It ran with: {json.dumps(outcome.args, sort_keys=True, ensure_ascii=False)}"
           if outcome.args else "")
    return f"{NOTE} A human reviewer edited this call's arguments before it ran{why}.{ran}"


def with_note(result: Any, note: str | None) -> Any:
    """``result`` with ``note`` for the model: a text result gets the line appended; any
    other result is sent as its JSON with the note after it."""
    if note is None:
        return result
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False,
                                                             default=str)
    return f"{text}\n{note}" if text else note
