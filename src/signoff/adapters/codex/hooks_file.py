"""``signoff hook install codex``: the hook entries merged into Codex's ``hooks.json``,
and Codex's trust in them written into its ``config.toml``.

Codex reads command hooks from ``$CODEX_HOME/hooks.json`` (the user; ``~/.codex``
unless set) or ``.codex/hooks.json`` (a project Codex trusts) in Claude Code's form:
``{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": …,
"timeout": …}]}], "PostToolUse": […]}}``. The merge keeps the user's entries; ours is
replaced, so installing twice changes nothing; the file as it was is kept as
``hooks.json.bak``.

Codex runs no hook nobody reviewed: a new entry is skipped, silently, until its hash is
trusted — ``[hooks.state."<hooks.json>:<event>:<group>:<handler>"] trusted_hash =
"sha256:…"`` in ``$CODEX_HOME/config.toml``, what reviewing it in Codex's ``/hooks``
writes. The hash is SHA-256 over the compact, key-sorted JSON of the entry as Codex
normalises it (``trust_hash``). Installing is the user's review of our entries, so the
installer writes their trust (``config.toml.bak`` keeps the file before); no other
entry is trusted.

The ``PreToolUse`` command ends ``|| { echo … >&2; exit 2; }``: Codex runs a call whose
hook exits 1 (signoff missing, a crash), and exit 2 blocks only with a reason on stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from signoff.adapters.hooks import settings_file

_MARK = "signoff hook codex"
_FAIL_CLOSED = {"PreToolUse": " || { echo 'signoff hook codex failed: the call was not "
                              "allowed' >&2; exit 2; }"}
_EVENT_KEYS = {"PreToolUse": "pre_tool_use", "PostToolUse": "post_tool_use"}
MATCHER = "*"


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def hook_commands(base: Sequence[str]) -> dict[str, str]:
    """The PreToolUse and PostToolUse commands: ``base`` is the signoff command and the
    flags that say where the gate is."""
    head = " ".join(shlex.quote(part) for part in base)
    return {"PreToolUse": f"{head} hook codex", "PostToolUse": f"{head} hook codex --event post"}


def trust_hash(event: str, entry: dict[str, Any]) -> str:
    """The hash Codex trusts an entry's first handler under: its identity (event, matcher,
    the handler with Codex's defaults: no async, timeout 600 s) as compact sorted JSON."""
    handler = entry["hooks"][0]
    identity: dict[str, Any] = {"event_name": _EVENT_KEYS[event], "hooks": [{
        "async": bool(handler.get("async", False)), "command": handler["command"],
        "timeout": int(handler.get("timeout", 600)), "type": handler.get("type", "command")}]}
    if entry.get("matcher") is not None:
        identity["matcher"] = entry["matcher"]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def merged(data: dict[str, Any], commands: dict[str, str], *, extra: Sequence[str],
           timeout: int) -> tuple[dict[str, Any], dict[str, tuple[int, str]]]:
    """``data`` with our entries in place (a new dict), and by event the index of ours in
    its list with its trust hash."""
    flags = "".join(" " + shlex.quote(part) for part in extra)

    def entry(event: str, command: str) -> dict[str, Any]:
        return {"matcher": MATCHER, "hooks": [
            {"type": "command", "command": command + flags + _FAIL_CLOSED.get(event, ""),
             "timeout": timeout}]}

    result, where = settings_file.merged(data, commands, mark=_MARK, entry=entry)
    return result, {event: (index, trust_hash(event, result["hooks"][event][index]))
                    for event, index in where.items()}


def others(path: Path) -> list[str]:
    """The commands of the hooks file's other ``PreToolUse`` handlers: each may answer
    ``allow`` with an ``updatedInput``, which Codex runs instead of what signoff judged."""
    hooks = json.loads(path.read_text("utf-8")).get("hooks", {})
    entries = hooks.get("PreToolUse", []) if isinstance(hooks, dict) else []
    return [str(h.get("command", h.get("type", "?"))) for entry in entries
            if isinstance(entry, dict) and isinstance(entry.get("hooks"), list)
            for h in entry["hooks"] if isinstance(h, dict) and not _ours(h)]


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and _MARK in str(hook.get("command", ""))


def trusted(config: str, path: Path, ours: dict[str, tuple[int, str]]) -> str:
    """``config`` (config.toml's text) trusting our entries of the hooks file ``path``:
    each ``[hooks.state."<key>"]`` table of ours rewritten, the rest kept as written."""
    tables = {f"{path}:{_EVENT_KEYS[event]}:{index}:0": digest
              for event, (index, digest) in ours.items()}
    kept: list[str] = []
    skipping = False
    for line in config.splitlines(keepends=True):
        header = re.match(r'\s*\[\s*hooks\s*\.\s*state\s*\.\s*("(?:[^"\\]|\\.)*")\s*\]\s*(#.*)?$',
                          line)
        if header is not None:
            skipping = json.loads(header.group(1)) in tables
        elif re.match(r"\s*\[", line):
            skipping = False
        if not skipping:
            kept.append(line)
    text = "".join(kept)
    if text and not text.endswith("\n"):
        text += "\n"
    for key, digest in tables.items():
        text += f"\n[hooks.state.{json.dumps(key)}]\ntrusted_hash = {json.dumps(digest)}\n"
    state = tomllib.loads(text).get("hooks", {}).get("state", {})
    if any(state.get(key, {}).get("trusted_hash") != digest for key, digest in tables.items()):
        raise ValueError("the trust of the signoff hooks did not read back from config.toml")
    return text


def install_hooks(path: Path, config: Path, commands: dict[str, str], *,
                  extra: Sequence[str] = (), timeout: int) -> tuple[bool, Path | None]:
    """Merge our hooks into the hooks file at ``path`` and trust them in the Codex
    ``config`` (each made if missing): whether either changed, and the backup of the
    hooks file's previous text (``None``: nothing to keep)."""
    before, text = settings_file.read(path)
    after, ours = merged(before, commands, extra=extra, timeout=timeout)
    config_text = config.read_text("utf-8") if config.exists() else None
    tomllib.loads(config_text or "")  # a config Codex could not read is not rewritten
    trusting = trusted(config_text or "", Path(os.path.abspath(path)), ours)
    changed = False
    backup = None
    if after != before or text is None:
        backup = settings_file.write(path, text, json.dumps(after, indent=2) + "\n")
        changed = True
    if trusting != config_text and tomllib.loads(trusting) != tomllib.loads(config_text or ""):
        settings_file.write(config, config_text, trusting)
        changed = True
    return changed, backup
