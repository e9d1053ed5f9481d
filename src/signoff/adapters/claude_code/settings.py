"""``signoff hook install claude-code``: the hook entries merged into Claude Code's settings.

Claude Code reads hooks from ``.claude/settings.json`` (a project) or
``~/.claude/settings.json`` (the user) as ``{"hooks": {"PreToolUse": [{"matcher": "*",
"hooks": [{"type": "command", "command": …, "timeout": …}]}], "PostToolUse": […]}}``.
The merge keeps every other setting and every other hook; an entry of ours already there
is replaced, so installing twice changes nothing. The file as it was is kept beside it
(``settings.json.bak``) whenever it changes. The PreToolUse command ends in ``|| exit 2``:
a hook that cannot start blocks the call instead of letting it through.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from signoff.adapters.hooks import settings_file

_MARK = "signoff hook claude-code"
# Claude Code takes a hook that exits other than 0 or 2 (signoff missing from PATH, a
# crash before it could answer) as a non-blocking error and runs the call: exit 2 blocks.
_FAIL_CLOSED = {"PreToolUse": " || exit 2"}


def hook_commands(base: Sequence[str]) -> dict[str, str]:
    """The PreToolUse and PostToolUse commands: ``base`` is the signoff command and the
    flags that say where the gate is."""
    head = " ".join(shlex.quote(part) for part in base)
    return {"PreToolUse": f"{head} hook claude-code",
            "PostToolUse": f"{head} hook claude-code --event post"}


def merged(settings: dict[str, Any], commands: dict[str, str], *, extra: Sequence[str],
           timeout: int, matcher: str = "*") -> dict[str, Any]:
    """``settings`` with our entries in place (a new dict; ``settings`` is not changed)."""
    return settings_file.merged(settings, commands, mark=_MARK,
                                entry=_entry(extra, timeout, matcher))[0]


def _entry(extra: Sequence[str], timeout: int, matcher: str = "*") -> settings_file.Entry:
    flags = "".join(" " + shlex.quote(part) for part in extra)

    def entry(event: str, command: str) -> dict[str, Any]:
        return {"matcher": matcher, "hooks": [
            {"type": "command", "command": command + flags + _FAIL_CLOSED.get(event, ""),
             "timeout": timeout}]}

    return entry


def install_hooks(path: Path, commands: dict[str, str], *, extra: Sequence[str] = (),
                  timeout: int) -> tuple[bool, Path | None]:
    """Merge our hooks into the settings file at ``path`` (made if missing): whether it
    changed, and the backup of what it held before (``None``: nothing to keep)."""
    return settings_file.install(path, commands, mark=_MARK, entry=_entry(extra, timeout))
