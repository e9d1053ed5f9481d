"""What the model reads back: tool messages for every outcome, and the AIMessage rewritten
so it says what really ran.

A rejection is an error ToolMessage carrying the approver's reason and
alternatives and telling the model not to retry the same call; ``respond`` is an
ordinary ToolMessage; a denial names what was refused and why. When an approver
edits arguments, the AIMessage that proposed the call is rewritten — in
``tool_calls`` and on every provider surface that carries the call (OpenAI chat
``additional_kwargs.tool_calls``, Anthropic ``tool_use`` blocks, OpenAI Responses
``function_call`` blocks) — so the conversation, and the next model turn, show
the arguments that ran.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from signoff.adapters import telling
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.model import Verdict

NOTE = "[signoff]"


def tool_message(call: Mapping[str, Any], content: str, *, error: bool = False,
                 **artifact: Any) -> ToolMessage:
    return ToolMessage(content=content, tool_call_id=str(call["id"]), name=call.get("name"),
                       status="error" if error else "success",
                       artifact={"signoff": artifact} if artifact else None)


def refused(call: Mapping[str, Any], verdict: Verdict) -> ToolMessage:
    """A denial or a block, as an error the model can act on (never an exception)."""
    return tool_message(call, verdict.message, error=True, effect=verdict.effect.value,
                        code=verdict.code)


def from_outcome(call: Mapping[str, Any], outcome: Outcome) -> ToolMessage:
    """A decided request that did not run here: rejected, responded, expired, …"""
    kind = outcome.kind
    rid = outcome.request_id
    if kind is OutcomeKind.REJECTED:
        text = telling.rejected(outcome)
        return tool_message(call, text, error=True, request_id=rid, outcome=kind.value,
                            reason=outcome.reason, alternatives=list(outcome.alternatives))
    if kind is OutcomeKind.RESPONDED:
        return tool_message(call, outcome.message or "", request_id=rid, outcome=kind.value)
    if kind is OutcomeKind.EXECUTED:
        result = outcome.result
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        return with_note(tool_message(call, text, request_id=rid, outcome=kind.value),
                         edit_note(outcome))
    return tool_message(call, telling.not_run(outcome),
                        error=True, request_id=rid, outcome=kind.value, code=outcome.code)


def reused_id(call: Mapping[str, Any], message: str) -> ToolMessage:
    """A call whose id this thread already used for another call (only the store knew):
    answered with an error, so the history has no unanswered call and the run goes on."""
    return tool_message(call, f"{NOTE} This tool call's id was already used in this thread "
                        f"for another call; it did not run. Call it again with a new id if it "
                        f"is needed. ({message})", error=True, code="call_id_reused")


def edit_note(outcome: Outcome) -> str | None:
    """What the model is told when an approver changed the call's arguments, and why."""
    if outcome.code != "edited":
        return None
    why = f": {outcome.reason}" if outcome.reason else ""
    return f"{NOTE} A human reviewer edited this call's arguments before it ran{why}"


def with_note(message: ToolMessage, note: str | None) -> ToolMessage:
    """``message`` with ``note`` appended to what the model reads."""
    if note is None:
        return message
    content: Any = message.content
    if isinstance(content, str):
        content = f"{content}\n{note}" if content else note
    else:
        content = [*content, {"type": "text", "text": note}]
    return message.model_copy(update={"content": content})


def strip_bad_ids(message: AIMessage, used: Set[str] = frozenset()) -> tuple[AIMessage,
                                                                              list[str]]:
    """Remove tool calls whose id is missing, empty, repeated, or ``used`` by an earlier
    turn of the thread; say so in the message.

    Such calls cannot be bound to a decision (or to their ToolMessage), so they are
    never paused on — every call of a repeated id, not only the later ones: which of them
    the model meant is not for the gate to guess. The note tells the model (and the
    transcript) what was dropped."""
    ids = [str(call.get("id")) for call in message.tool_calls if call.get("id")]
    repeated = {call_id for call_id in ids if ids.count(call_id) > 1}
    kept: list[Any] = []
    dropped: list[str] = []
    for call in message.tool_calls:
        call_id = call.get("id")
        if not call_id or not str(call_id).strip() or call_id in repeated or call_id in used:
            why = "an id already used in this thread" if call_id in used else \
                "a repeated id" if call_id in repeated else "no id"
            dropped.append(f"{NOTE} removed the tool call {call.get('name')!r} with {why}; "
                           "it did not run. Call it again with a unique id if it is needed.")
            continue
        kept.append(call)
    if not dropped:
        return message, []
    note = "\n".join(dropped)
    content: Any = message.content
    if isinstance(content, str):
        content = f"{content}\n{note}" if content else note
    else:
        content = [*content, {"type": "text", "text": note}]
    return message.model_copy(update={"tool_calls": kept, "content": content,
                                      "invalid_tool_calls": message.invalid_tool_calls}), dropped


def with_edited_args(message: AIMessage, edits: Mapping[str, Mapping[str, Any]]) -> AIMessage:
    """A copy of ``message`` whose calls in ``edits`` (id → new args) carry the new args on
    every surface a provider may read them from."""
    calls = [{**c, "args": dict(edits[str(c.get("id"))])} if c.get("id") in edits else c
             for c in message.tool_calls]
    kwargs = dict(message.additional_kwargs)
    if isinstance(kwargs.get("tool_calls"), list):
        kwargs["tool_calls"] = [_openai_chat(c, edits) for c in kwargs["tool_calls"]]
    content: Any = message.content
    if isinstance(content, list):
        content = [_block(b, edits) for b in content]
    return message.model_copy(update={"tool_calls": calls, "additional_kwargs": kwargs,
                                      "content": content})


def _openai_chat(item: Any, edits: Mapping[str, Mapping[str, Any]]) -> Any:
    if isinstance(item, dict) and item.get("id") in edits and isinstance(item.get("function"),
                                                                         dict):
        return {**item, "function": {**item["function"],
                                     "arguments": json.dumps(edits[item["id"]])}}
    return item


def _block(block: Any, edits: Mapping[str, Mapping[str, Any]]) -> Any:
    if not isinstance(block, dict):
        return block
    if block.get("type") == "tool_use" and block.get("id") in edits:  # Anthropic
        return {**block, "input": dict(edits[block["id"]])}
    if block.get("type") == "function_call":  # OpenAI Responses
        key = str(block.get("call_id") if block.get("call_id") in edits else block.get("id"))
        if key in edits:
            return {**block, "arguments": json.dumps(edits[key])}
    if block.get("type") == "tool_call" and block.get("id") in edits:  # LangChain v1 blocks
        return {**block, "args": dict(edits[block["id"]])}
    return block


def proposing_message(messages: Sequence[BaseMessage], call_id: str) -> AIMessage | None:
    """The AIMessage whose tool calls include ``call_id`` (the latest one)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(c.get("id") == call_id
                                                  for c in message.tool_calls):
            return message
    return None
