"""A hook event as Claude Code, Codex CLI and Gemini CLI send it on stdin.

All three send one JSON object naming the event (``hook_event_name``), the session
(``session_id``), the tool (``tool_name``) and its input (``tool_input``). Anything else —
not an object, another event, no session or tool, an input that is not an object — is a
``ValueError``, which each hook answers with a refusal.
"""

from __future__ import annotations

import json
from typing import Any

from signoff.canonical import parse_args


def read_event(text: str | bytes, *expected: str
               ) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """(session, tool, tool input, event) of one of the ``expected`` events: ``ValueError``
    for anything else."""
    event = json.loads(text)
    if not isinstance(event, dict):
        raise ValueError("the hook input is not a JSON object")
    name = event.get("hook_event_name")
    if name not in expected:
        raise ValueError(f"expected a {' or '.join(expected)} event, got {name!r}")
    session, tool, given = event.get("session_id"), event.get("tool_name"), event.get("tool_input")
    if not isinstance(session, str) or not session:
        raise ValueError("the hook input has no session_id")
    if not isinstance(tool, str) or not tool:
        raise ValueError("the hook input has no tool_name")
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ValueError("tool_input is not a JSON object")
    return session, tool, parse_args(given), event
