"""Codex CLI's ``PreToolUse`` hook answered by the gate, and its ``PostToolUse`` reported.

Codex (0.171) runs a command hook with Claude Code's event JSON on stdin (``session_id``
— the thread id —, ``cwd``, ``hook_event_name``, ``tool_name``, ``tool_input``,
``tool_use_id``): its shell tool as ``Bash`` with ``{"command": …}``, its ``apply_patch``
tool with the whole patch as ``command``, MCP tools as ``mcp__<server>__<tool>``.

Only a refusal blocks a call in Codex: ``permissionDecision: "deny"`` with a reason (or
exit 2 with the reason on stderr). ``allow`` and ``ask`` are "unsupported" there — logged
and ignored, so the call runs — and Codex has no prompt a hook can hand an ask to: an
allowed call is answered with nothing (no objection), and ``--ask-locally`` is refused.
A hook that exits 1, or outlives its timeout, does not block: the installed command ends
``|| exit 2`` and the hook's wait stays inside the timeout (``hooks_file``).
"""

from __future__ import annotations

import json
from typing import Any

from signoff.adapters.hooks.events import read_event
from signoff.adapters.hooks.harness import Reply
from signoff.adapters.hooks.judging import HookGate, HookOptions, judge, report
from signoff.errors import ConfigurationError

AGENT = "codex"


class AskLocallyUnsupported(ConfigurationError):
    """Codex has no permission prompt a ``PreToolUse`` hook can hand an ask to."""

    def __init__(self) -> None:
        super().__init__("codex cannot hand an ask to its own prompt (a PreToolUse "
                         "\"ask\" is ignored and the call runs): --ask-locally is not "
                         "supported for codex; asks wait for a human in signoff",
                         code="ask_locally_unsupported")


def deny(reason: str) -> dict[str, Any]:
    """The ``PreToolUse`` answer that blocks the call (the reason must not be empty)."""
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason or "denied by signoff"}}


def pre_tool_use(gate: HookGate, text: str | bytes, options: HookOptions
                 ) -> dict[str, Any] | None:
    """The answer to one ``PreToolUse`` event: ``None`` lets the call run, anything else
    is a deny. Bad input, a gate that fails, an ask nobody decided: a deny."""
    if options.ask_locally:
        return deny(f"signoff: {AskLocallyUnsupported()}; the call was not allowed")
    try:
        session, tool, args, _ = read_event(text, "PreToolUse")
    except Exception as exc:  # fail closed on any bad input
        return deny(f"signoff could not read the hook input ({exc}); the call was not allowed")
    answer = judge(gate, session, tool, args, options)
    if answer.kind == "allow":
        return None
    return deny(answer.reason)


def post_tool_use(gate: HookGate, text: str | bytes, options: HookOptions) -> str | None:
    """Report a ``PostToolUse`` result through ``signoff.adapters.hooks.report``; the
    request id reported, if any. Codex's ``tool_response`` is the tool's output text,
    with no failure flag: the result is reported as returned."""
    session, tool, args, event = read_event(text, "PostToolUse")
    return report(gate, session, tool, args, response=event.get("tool_response"),
                  failed=False, options=options, tool_use_id=event.get("tool_use_id"))


class Codex:
    """Codex CLI as ``signoff hook codex`` drives it (``signoff.adapters.hooks``)."""

    agent = AGENT

    def pre(self, gate: HookGate, raw: bytes, options: HookOptions) -> Reply:
        answer = pre_tool_use(gate, raw, options)
        if answer is None:
            return Reply()
        unsupported = f"signoff hook: {AskLocallyUnsupported()}" if options.ask_locally else ""
        return Reply(json.dumps(answer), stderr=unsupported)

    def post(self, gate: HookGate, raw: bytes, options: HookOptions) -> None:
        post_tool_use(gate, raw, options)

    def refuse(self, reason: str) -> Reply:
        return Reply(json.dumps(deny(reason)))
