"""``signoff hook install gemini``: the hook entries merged into Gemini CLI's settings.

Gemini CLI reads hooks from ``.gemini/settings.json`` (a project, run only in a trusted
folder) or ``~/.gemini/settings.json`` (the user) as ``{"hooks": {"BeforeTool":
[{"matcher": "*", "hooks": [{"name": …, "type": "command", "command": …, "timeout":
<ms>}]}], "AfterTool": […]}}``. The merge keeps every other setting and every other hook;
an entry of ours already there is replaced, so installing twice changes nothing. The file
as it was is kept beside it (``settings.json.bak``) whenever it changes.

Gemini CLI lets a call run when its hook exits other than 0 or 2 (signoff missing from
PATH, a crash before it could answer) or outlives its timeout: so the BeforeTool command
ends by turning any failure into exit 2 with a reason on stderr, and the timeout is the
hook's ``--wait`` and 15 s more.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_MARK = "signoff hook gemini"
_NAME = "signoff"
_DESCRIPTION = "signoff: the gate's answer to each tool call (docs/coding-agents.md)"
_FAIL_CLOSED = {"BeforeTool": ' || { echo "signoff hook gemini failed; the call was not '
                              'allowed" >&2; exit 2; }'}


def hook_commands(base: Sequence[str]) -> dict[str, str]:
    """The BeforeTool and AfterTool commands: ``base`` is the signoff command and the
    flags that say where the gate is."""
    head = " ".join(shlex.quote(part) for part in base)
    return {"BeforeTool": f"{head} hook gemini", "AfterTool": f"{head} hook gemini --event post"}


def merged(settings: dict[str, Any], commands: dict[str, str], *, extra: Sequence[str],
           timeout_ms: int, matcher: str = "*") -> dict[str, Any]:
    """``settings`` with our entries in place (a new dict; ``settings`` is not changed)."""
    result: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = result.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("the settings' \"hooks\" is not an object")
    flags = "".join(" " + shlex.quote(part) for part in extra)
    for event, command in commands.items():
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise ValueError(f"the settings' hooks.{event} is not a list")
        kept = []
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
                inner = [h for h in entry["hooks"] if not _ours(h)]
                if not inner and any(_ours(h) for h in entry["hooks"]):
                    continue  # an entry that held only ours: replaced below
                kept.append({**entry, "hooks": inner})
            else:
                kept.append(entry)
        kept.append({"matcher": matcher, "hooks": [
            {"name": f"{_NAME}-{event}", "type": "command",
             "command": command + flags + _FAIL_CLOSED.get(event, ""),
             "timeout": timeout_ms,
             "description": _DESCRIPTION}]})
        hooks[event] = kept
    return result


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and _MARK in str(hook.get("command", ""))


def install_hooks(path: Path, commands: dict[str, str], *, extra: Sequence[str] = (),
                  timeout_ms: int) -> tuple[bool, Path | None]:
    """Merge our hooks into the settings file at ``path`` (made if missing): whether it
    changed, and the backup of what it held before (``None``: nothing to keep)."""
    before: dict[str, Any] = {}
    text = None
    if path.exists():
        text = path.read_text("utf-8")
        loaded = json.loads(text) if text.strip() else {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{path} does not hold a JSON object")
        before = loaded
    after = merged(before, commands, extra=extra, timeout_ms=timeout_ms)
    if after == before and text is not None:
        return False, None
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if text is not None:
        backup = path.with_name(path.name + ".bak")
        backup.write_text(text, "utf-8")
    temporary = path.with_name(path.name + ".signoff-tmp")
    temporary.write_text(json.dumps(after, indent=2) + "\n", "utf-8")
    os.replace(temporary, path)
    return True, backup
