"""Rules written into a policy file's own text, its comments and layout kept.

``signoff insights suggest --apply`` changes a file a person wrote and reads: it must
not re-serialize it (the standard library reads TOML but does not write it, and a
rewrite would drop every comment). So new rules are inserted as text — at the end, or
just before the first allow rule when a rule's ``writes`` must be the first to admit
its command (``policy/evaluation.py`` reads ``writes`` from the first admitting rule
only) — and the ``[policy] version`` line is replaced in place, or added.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from signoff.model import Effect
from signoff.policy.spec import PolicyConfig

_RULES_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*rules[ \t]*\]\][ \t]*(?:#.*)?$", re.MULTILINE)
_ANY_HEADER = re.compile(r"^[ \t]*\[", re.MULTILINE)
_POLICY_HEADER = re.compile(r"^[ \t]*\[[ \t]*policy[ \t]*\][ \t]*(?:#.*)?$", re.MULTILINE)
_VERSION = re.compile(r"^([ \t]*version[ \t]*=[ \t]*)(\"[^\"\n]*\"|'[^'\n]*')(.*)$",
                      re.MULTILINE)


def early_offset(text: str, config: PolicyConfig) -> int | None:
    """Where a rule must go to come before every allow rule: the start of the comment
    block above the first allow rule's header. ``None`` when the headers cannot be
    matched to the rules one to one (rules written as inline tables), or when a
    non-mandatory ask rule comes after that point (the new allow rule would overtake it)."""
    headers = list(_RULES_HEADER.finditer(text))
    rules = config.rules
    if len(headers) != len(rules):
        return None
    first = next((i for i, r in enumerate(rules) if r.effect is Effect.ALLOW), None)
    if first is None:
        return None
    if any(r.effect is Effect.ASK and not r.mandatory for r in rules[first:]):
        return None
    start = headers[first].start()
    lines = text[:start].split("\n")[:-1]
    while lines and lines[-1].lstrip().startswith("#"):
        lines.pop()
    return len("\n".join(lines)) + (1 if lines else 0)


def insert_rules(text: str, config: PolicyConfig, blocks: Sequence[tuple[str, bool]]) -> str:
    """``text`` with each rule block added: ``(block, early)``; early ones before the first
    allow rule where that is possible, the others (and those) at the end."""
    front = [b for b, early in blocks if early]
    at = early_offset(text, config) if front else None
    if at is None:
        tail = [b for b, _ in blocks]
        head_text = text
    else:
        tail = [b for b, early in blocks if not early]
        head_text = text[:at] + "".join(f"{b}\n" for b in front) + text[at:]
    if not tail:
        return head_text
    sep = "" if head_text.endswith("\n") else "\n"
    return head_text + sep + "".join(f"\n{b}" for b in tail)


def set_version(text: str, version: str) -> str:
    """``text`` with ``[policy] version`` set to ``version`` (the line replaced, or added)."""
    quoted = '"' + version.replace("\\", "\\\\").replace('"', '\\"') + '"'
    policy = _POLICY_HEADER.search(text)
    if policy is None:
        return f"[policy]\nversion = {quoted}\n\n{text}"
    following = _ANY_HEADER.search(text, policy.end())
    end = following.start() if following else len(text)
    line = _VERSION.search(text, policy.end(), end)
    if line is None:
        return f"{text[:policy.end()]}\nversion = {quoted}{text[policy.end():]}"
    return f"{text[:line.start()]}{line.group(1)}{quoted}{line.group(3)}{text[line.end():]}"


def next_version(version: str, today: str) -> str:
    """The version after ``version``: its trailing number plus one (``"7"`` → ``"8"``,
    ``"team-3"`` → ``"team-4"``), else ``version`` and the date (``"…+2026-05-01"``)."""
    match = re.fullmatch(r"(.*?)(\d+)", version)
    if match and not re.fullmatch(r".*\d{4}-\d{2}-\d{2}", version):
        return f"{match.group(1)}{int(match.group(2)) + 1}"
    return f"{version.split('+', 1)[0]}+{today}"


def diff(before: str, after: str, name: str) -> str:
    """A unified diff of the policy file, for a person to read before it is written."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                        after.splitlines(keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))
