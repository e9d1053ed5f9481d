"""Path-aware globs, and which of a set of them a path matches, in time linear in the path.

A glob's ``*`` and ``?`` stay within one path segment and ``**`` spans any number of
them (``glob_to_regex``). A set of them is matched as one RE2 set (``is_sensitive``): a
pattern without a leading ``/`` matches at any depth. Shared by the policy (its
sensitive and secret paths, its argument patterns) and the shell analysis (a recursive
read's walk, ``signoff.shell.treewalk``), so it lives below both.
"""

from __future__ import annotations

import posixpath
from functools import lru_cache

from signoff.globs.linear import LinearSet

_META = frozenset(".^$*+?()[]{}|\\-&~#")


def regex_literal(char: str) -> str:
    """A literal character, in a syntax both RE2 and Python's ``re`` read the same."""
    return "\\" + char if char in _META else char


def glob_to_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    n = len(glob)
    while i < n:
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = glob.find("]", i + 2 if glob.startswith(("[!", "[^"), i) else i + 1)
            if end < 0:
                out.append(regex_literal(char))
                i += 1
                continue
            body = glob[i + 1:end]
            negated = body.startswith(("!", "^"))
            if negated:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            out.append(("[^" if negated else "[") + body + "]")
            i = end + 1
        else:
            out.append(regex_literal(char))
            i += 1
    return "".join(out)


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[LinearSet, LinearSet]:
    """All patterns as one RE2 set over absolute paths and one over relative ones: one
    pass in time linear in the path, whatever its length, says which pattern matched.
    A pattern without a leading ``/`` matches at any depth; an anchored one only an
    absolute path."""
    absolute: list[str] = []
    relative: list[str] = []
    for pattern in patterns:
        body = glob_to_regex(pattern.strip("/"))
        if pattern.startswith("/"):
            absolute.append(f"/{body}")
            relative.append(_NEVER)
        else:
            absolute.append(f"/(?:.*/)?{body}")
            relative.append(f"(?:.*/)?{body}")
    return LinearSet(absolute), LinearSet(relative)


_NEVER = r"[^\x00-\x{10FFFF}]"  # matches nothing: keeps the indices of both sets aligned


# A copy an editor or a person leaves beside a file: .env~, .netrc.bak, credentials.orig
_BACKUP = frozenset(("bak", "backup", "orig", "old", "save", "sav", "swp", "swo", "tmp",
                     "copy"))


def _original(path: str) -> str | None:
    """The file ``path`` is a backup copy of, or ``None`` (a look at its end only: a
    search through a long path would cost time in proportion to its dots)."""
    if path.endswith(("~", "-")):
        return path[:-1]
    _, dot, extension = path[-8:].rpartition(".")
    if dot and extension.lower() in _BACKUP:
        return path[:len(path) - len(extension) - 1]
    return None


def is_secret(path: str, secrets: tuple[str, ...]) -> str | None:
    """The secret pattern ``path`` matches, itself or as a backup copy of a match
    (``.env~``, ``.pgpass.bak``): a copy holds what the file held."""
    hit = is_sensitive(path, secrets)
    if hit is None and (original := _original(path)) is not None:
        hit = is_sensitive(original, secrets)
    return hit


def is_sensitive(path: str, patterns: tuple[str, ...]) -> str | None:
    """The first pattern ``path`` matches, or ``None``. ``path`` may be relative."""
    if not path:
        return None
    normal = posixpath.normpath(path)
    absolute, relative = _compiled(patterns)
    index = (absolute if normal.startswith("/") else relative).first(
        normal.removeprefix("./"))
    return None if index is None else patterns[index]
