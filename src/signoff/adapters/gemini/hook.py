"""Gemini CLI's ``BeforeTool`` hook answered by the gate, and its ``AfterTool`` reported.

Gemini CLI runs the hook command with the event as JSON on stdin (``session_id``,
``cwd``, ``hook_event_name``, ``tool_name``, ``tool_input``; ``tool_response`` after the
call) and reads ``{"decision": "allow" | "deny" | "ask", "reason": …}`` from stdout: a
deny's reason goes to the model as the tool's error, an ask hands the call to Gemini
CLI's own confirmation. Output that is not JSON counts as an allow, so the hook prints
nothing else. The judging is the harness-neutral ``signoff.adapters.hooks``.
"""

from __future__ import annotations

import json
from typing import Any

from signoff.adapters.hooks.events import read_event
from signoff.adapters.hooks.harness import Reply
from signoff.adapters.hooks.judging import Answer, HookGate, HookOptions, judge, report

AGENT = "gemini-cli"

__all__ = ["AGENT", "Gemini", "after_tool", "before_tool", "decision", "read_event"]


def decision(kind: str, reason: str) -> dict[str, Any]:
    """The ``BeforeTool`` answer Gemini CLI reads (never a ``tool_input`` rewrite)."""
    answer: dict[str, Any] = {"decision": kind, "reason": reason}
    if kind == "ask":
        answer["systemMessage"] = reason  # shown beside Gemini CLI's own prompt
    return answer


def rendered(answer: Answer) -> dict[str, Any]:
    return decision(answer.kind, answer.reason)


def before_tool(gate: HookGate, text: str | bytes, options: HookOptions) -> dict[str, Any]:
    """The answer to one ``BeforeTool`` event. Anything the gate cannot judge — bad input,
    a gate that fails — is a deny: what the gate cannot see, a human decides."""
    try:
        session, tool, args, _ = read_event(text, "BeforeTool")
    except Exception as exc:  # fail closed on any bad input
        return decision("deny", f"signoff could not read the hook input ({exc}); the call "
                        "was not allowed")
    return rendered(judge(gate, session, tool, args, options))


def after_tool(gate: HookGate, text: str | bytes, options: HookOptions) -> str | None:
    """Report an ``AfterTool`` result (a ``tool_response`` with an ``error``: a failure)
    through ``signoff.adapters.hooks.report``; the request id reported, if any."""
    session, tool, args, event = read_event(text, "AfterTool")
    response = event.get("tool_response")
    failed = isinstance(response, dict) and bool(response.get("error"))
    return report(gate, session, tool, args, response=response, failed=failed,
                  options=options)


class Gemini:
    """Gemini CLI as ``signoff hook gemini`` drives it (``signoff.adapters.hooks``)."""

    agent = AGENT

    def pre(self, gate: HookGate, raw: bytes, options: HookOptions) -> Reply:
        return Reply(json.dumps(before_tool(gate, raw, options)))

    def post(self, gate: HookGate, raw: bytes, options: HookOptions) -> None:
        after_tool(gate, raw, options)

    def refuse(self, reason: str) -> Reply:
        # Exit 2 blocks even if the JSON were lost: Gemini CLI then reads stderr as the reason.
        return Reply(json.dumps(decision("deny", reason)), exit_code=2, stderr=reason)
