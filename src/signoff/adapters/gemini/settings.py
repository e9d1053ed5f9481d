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

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from signoff.adapters.hooks import settings_file

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
    return settings_file.merged(settings, commands, mark=_MARK,
                                entry=_entry(extra, timeout_ms, matcher))[0]


def _entry(extra: Sequence[str], timeout_ms: int, matcher: str = "*") -> settings_file.Entry:
    flags = "".join(" " + shlex.quote(part) for part in extra)

    def entry(event: str, command: str) -> dict[str, Any]:
        return {"matcher": matcher, "hooks": [
            {"name": f"{_NAME}-{event}", "type": "command",
             "command": command + flags + _FAIL_CLOSED.get(event, ""),
             "timeout": timeout_ms, "description": _DESCRIPTION}]}

    return entry


def install_hooks(path: Path, commands: dict[str, str], *, extra: Sequence[str] = (),
                  timeout_ms: int) -> tuple[bool, Path | None]:
    """Merge our hooks into the settings file at ``path`` (made if missing): whether it
    changed, and the backup of what it held before (``None``: nothing to keep)."""
    return settings_file.install(path, commands, mark=_MARK,
                                 entry=_entry(extra, timeout_ms))
