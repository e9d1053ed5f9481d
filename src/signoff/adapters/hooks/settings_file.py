"""A harness's hook settings (a JSON file) with signoff's entries merged in.

Claude Code, Codex CLI and Gemini CLI all read hooks as ``{"hooks": {"<Event>":
[{"matcher": …, "hooks": [{"type": "command", "command": …, …}]}]}}``. The merge keeps
every other setting and every other hook; an entry of ours (its command names
``mark``) already there is replaced, so installing twice changes nothing. The file as it
was is kept beside it (``<name>.bak``) whenever it changes, and the new one replaces it
in one rename. What differs per harness — the entry's fields, the timeout's unit, the
command's fail-closed ending — is the ``entry`` it gives.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: The hook entry for one event's command (the whole ``{"matcher": …, "hooks": […]}``).
Entry = Callable[[str, str], dict[str, Any]]


def merged(settings: Mapping[str, Any], commands: Mapping[str, str], *, mark: str,
           entry: Entry) -> tuple[dict[str, Any], dict[str, int]]:
    """``settings`` with our entries in place (a new dict), and by event the index of
    ours in its list."""
    result: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = result.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("the settings' \"hooks\" is not an object")

    # Ours however signoff was started: ``signoff hook …``, ``python -m signoff.cli hook …``
    # (so switching between an in-process and a resident install leaves one, not two).
    marks = (mark, mark.replace("signoff hook ", "signoff.cli hook ", 1))

    def ours(hook: Any) -> bool:
        command = str(hook.get("command", "")) if isinstance(hook, dict) else ""
        return any(m in command for m in marks)

    where: dict[str, int] = {}
    for event, command in commands.items():
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise ValueError(f"the settings' hooks.{event} is not a list")
        kept = []
        for old in entries:
            if isinstance(old, dict) and isinstance(old.get("hooks"), list):
                inner = [h for h in old["hooks"] if not ours(h)]
                if not inner and any(ours(h) for h in old["hooks"]):
                    continue  # an entry that held only ours: replaced below
                kept.append({**old, "hooks": inner})
            else:
                kept.append(old)
        where[event] = len(kept)
        kept.append(entry(event, command))
        hooks[event] = kept
    return result, where


def read(path: Path) -> tuple[dict[str, Any], str | None]:
    """The settings at ``path`` and their text (``({}, None)``: no file yet)."""
    if not path.exists():
        return {}, None
    text = path.read_text("utf-8")
    loaded = json.loads(text) if text.strip() else {}
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return loaded, text


def write(path: Path, before: str | None, after: str) -> Path | None:
    """Replace ``path``'s text (``before``, kept as ``<name>.bak``) with ``after``; the
    backup's path, or ``None`` when there was no file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if before is not None:
        backup = path.with_name(path.name + ".bak")
        backup.write_text(before, "utf-8")
    temporary = path.with_name(path.name + ".signoff-tmp")
    temporary.write_text(after, "utf-8")
    os.replace(temporary, path)
    return backup


def install(path: Path, commands: Mapping[str, str], *, mark: str,
            entry: Entry) -> tuple[bool, Path | None]:
    """Merge our entries into the settings file at ``path`` (made if missing): whether it
    changed, and the backup of what it held before (``None``: nothing to keep)."""
    before, text = read(path)
    after, _ = merged(before, commands, mark=mark, entry=entry)
    if after == before and text is not None:
        return False, None
    return True, write(path, text, json.dumps(after, indent=2) + "\n")
