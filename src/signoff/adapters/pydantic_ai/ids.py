"""Tool call ids a decision can be bound to: one per call, never reused in a conversation.

A decision, a pause's ``DeferredToolRequests`` and the tool's return all find their call
by its id. Pydantic AI refuses a turn with repeated ids by ending the run
(``UnexpectedModelBehavior``); signoff removes such calls from the model's turn first —
missing, blank, repeated or used by an earlier turn — and says so in the turn, so
nothing ambiguous runs and the run goes on (as the LangChain middleware does).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from signoff.extras import absent

try:
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
except ImportError as exc:
    raise absent("pydantic-ai", __name__, exc) from exc

NOTE = "[signoff]"


def used_ids(messages: Sequence[ModelMessage], but: ModelResponse | None = None) -> set[str]:
    """The tool call ids of every model turn in ``messages`` (``but`` that one)."""
    return {c.tool_call_id for m in messages if isinstance(m, ModelResponse) and m is not but
            for c in m.tool_calls}


def why_bad(call_id: str | None, seen: set[str], used: set[str]) -> str | None:
    if not call_id or not call_id.strip():
        return "no id"
    if call_id in used:
        return "an id an earlier turn used"
    if call_id in seen:
        return "an id repeated in its turn"
    return None


def strip_bad_ids(response: ModelResponse, used: set[str]) -> ModelResponse:
    """``response`` without the tool calls whose ids cannot be bound, with a note naming
    each one removed; the same object when none is."""
    counts: dict[str, int] = {}
    for part in response.parts:
        if type(part) is ToolCallPart:
            counts[part.tool_call_id] = counts.get(part.tool_call_id, 0) + 1
    repeated = {call_id for call_id, n in counts.items() if n > 1}
    kept: list[object] = []
    notes: list[str] = []
    for part in response.parts:
        if type(part) is ToolCallPart:
            why = why_bad(part.tool_call_id, repeated, used)
            if why is not None:
                notes.append(f"{NOTE} removed the tool call {part.tool_name!r} with {why}; it "
                             "did not run. Call it again with a unique id if it is needed.")
                continue
        kept.append(part)
    if not notes:
        return response
    return dataclasses.replace(response, parts=[*kept, TextPart("\n".join(notes))])  # type: ignore[list-item]
