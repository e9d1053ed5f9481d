"""Claude Code's ``PreToolUse`` hook answered by the gate, and its ``PostToolUse`` reported.

Claude Code runs the hook command with the event as JSON on stdin (``session_id``,
``cwd``, ``hook_event_name``, ``tool_name``, ``tool_input``, ``tool_use_id``) and reads
``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
"allow" | "deny" | "ask", "permissionDecisionReason": …, "updatedInput": …}}`` from
stdout — ``updatedInput`` (the arguments to run instead) carries an approver's edit. The
judging is the harness-neutral ``signoff.adapters.hooks``; this module reads Claude
Code's event and writes its answer.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from signoff.adapters.hooks import claims
from signoff.adapters.hooks.events import read_event
from signoff.adapters.hooks.harness import Reply
from signoff.adapters.hooks.judging import Answer, HookGate, HookOptions, call_id_for, judge, report

AGENT = "claude-code"

__all__ = ["AGENT", "ClaudeCode", "HookOptions", "call_id_for", "claims", "decision", "deny",
           "post_tool_use", "pre_tool_use", "read_event"]


def decision(kind: str, reason: str) -> dict[str, Any]:
    """The ``PreToolUse`` answer Claude Code reads."""
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": kind,
                                   "permissionDecisionReason": reason}}


def deny(reason: str) -> dict[str, Any]:
    return decision("deny", reason)


def rendered(answer: Answer) -> dict[str, Any]:
    return decision(answer.kind, answer.reason)


def pre_tool_use(gate: HookGate, text: str | bytes, options: HookOptions) -> dict[str, Any]:
    """The answer to one ``PreToolUse`` event. Anything the gate cannot judge — bad input,
    a gate that fails — is a deny: what the gate cannot see, a human decides."""
    try:
        session, tool, args, _ = read_event(text, "PreToolUse")
    except Exception as exc:  # fail closed on any bad input
        return deny(f"signoff could not read the hook input ({exc}); the call was not allowed")
    # Claude Code runs a PreToolUse hook's ``updatedInput`` in place of the model's input:
    # an approver's edit runs as approved (its hash checked against the approval).
    answer = judge(gate, session, tool, args, dataclasses.replace(options, runs_edits=True))
    out = rendered(answer)
    if answer.kind == "allow" and answer.execution is not None \
            and answer.execution.args != args:
        out["hookSpecificOutput"]["updatedInput"] = dict(answer.execution.args)
    return out


def post_tool_use(gate: HookGate, text: str | bytes, options: HookOptions) -> str | None:
    """Report a ``PostToolUse`` result (``PostToolUseFailure``: a failure) through
    ``signoff.adapters.hooks.report``; the request id reported, if any."""
    session, tool, args, event = read_event(text, "PostToolUse", "PostToolUseFailure")
    response = event.get("tool_response", event.get("error"))
    failed = event["hook_event_name"] == "PostToolUseFailure" or (isinstance(
        response, dict) and (response.get("is_error") is True or response.get("isError") is True))
    return report(gate, session, tool, args, response=response, failed=failed,
                  options=options, tool_use_id=event.get("tool_use_id"))


class ClaudeCode:
    """Claude Code as ``signoff hook claude-code`` drives it (``signoff.adapters.hooks``)."""

    agent = AGENT

    def pre(self, gate: HookGate, raw: bytes, options: HookOptions) -> Reply:
        return Reply(json.dumps(pre_tool_use(gate, raw, options)))

    def post(self, gate: HookGate, raw: bytes, options: HookOptions) -> None:
        post_tool_use(gate, raw, options)

    def refuse(self, reason: str) -> Reply:
        return Reply(json.dumps(deny(reason)))
