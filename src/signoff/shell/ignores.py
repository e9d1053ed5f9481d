"""Ignore files, read as git and rg read them, for a walk of a directory.

``git add -A`` stages what ``.gitignore`` does not exclude, and ``rg`` skips it too;
a ``.env`` that is ignored is not read, one that is not is copied into the object
store (and ``git diff --cached`` prints it). So a walk that ``honours`` ignore files
skips what they exclude: each directory's own files (``.gitignore``; for rg also
``.ignore`` and ``.rgignore``, which win over it), those of the directories above
it up to the repository's top, and ``.git/info/exclude`` beneath them all — the
deeper file decides, and the last matching pattern in it (``pathspec``'s
gitwildmatch, negations included). An ignored directory is not entered: git cannot
re-include a file beneath one. ``.gitignore`` counts only inside a repository, as
for both tools. The user's global excludes file is not read: a file only it
ignores counts as read (a question, never a secret missed).

Whether the files can be trusted at all — the line may rewrite them before the tool
runs — is ``signoff.shell.chain.settle_ignores``'s to say.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

MAX_BYTES = 64 * 1024  # of one ignore file
MAX_LEVELS = 64  # directories above a walk's root looked at for the repository's top
GITIGNORE = ".gitignore"

# (lead, cut, spec): a path relative to the walk's root, ``relative``, is checked as
# ``lead + relative[cut:]`` (the path from the ignore file's directory)
_Rule = tuple[str, int, "pathspec.GitIgnoreSpec"]


def repository_top(directory: str) -> str | None:
    """The nearest directory at or above ``directory`` that holds ``.git``."""
    current = os.path.realpath(directory)
    for _ in range(MAX_LEVELS):
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


class Ignores:
    """The ignore rules in force in one directory of a walk."""

    __slots__ = ("_names", "_rules")

    def __init__(self, names: tuple[str, ...], rules: tuple[_Rule, ...] = ()) -> None:
        self._names, self._rules = names, rules

    @classmethod
    def above(cls, root: str, names: tuple[str, ...]) -> Ignores:
        """The rules of the directories above ``root``, up to its repository's top (with
        ``.git/info/exclude``); without a repository, ``.gitignore`` is not honoured."""
        top = repository_top(root)
        if top is None:
            return cls(tuple(n for n in names if n != GITIGNORE))
        real = os.path.realpath(root)
        ignores = cls(names)
        if GITIGNORE in names:
            ignores = ignores._with(os.path.join(top, ".git", "info"), ("exclude",),
                                    _lead(top, real), 0)
        ancestor = real
        chain: list[str] = []
        while ancestor != top and len(chain) < MAX_LEVELS:
            ancestor = os.path.dirname(ancestor)
            chain.append(ancestor)
        for directory in reversed(chain):
            ignores = ignores._with(directory, names, _lead(directory, real), 0)
        return ignores

    def within(self, directory: str, prefix: str) -> Ignores:
        """The rules in force beneath ``directory`` (``prefix``: its path from the root)."""
        return self._with(directory, self._names, "", len(prefix))

    def ignored(self, relative: str, is_dir: bool) -> bool:
        decided: bool | None = None
        for lead, cut, spec in self._rules:
            path = lead + relative[cut:] + ("/" if is_dir else "")
            include = spec.check_file(path).include
            if include is not None:
                decided = include
        return bool(decided)

    def _with(self, directory: str, names: tuple[str, ...], lead: str, cut: int) -> Ignores:
        rules = list(self._rules)
        for name in names:
            lines = _read(os.path.join(directory, name))
            if lines:
                import pathspec  # noqa: PLC0415 (when an ignore file is read)

                rules.append((lead, cut, pathspec.GitIgnoreSpec.from_lines(lines)))
        return self if len(rules) == len(self._rules) else Ignores(self._names, tuple(rules))


def _lead(directory: str, root: str) -> str:
    relative = os.path.relpath(root, directory)
    return "" if relative == "." else relative + "/"


def _read(path: str) -> list[str]:
    """An ignore file's lines; none when it is missing, unreadable or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO would block the read
            return []
        data = os.read(fd, MAX_BYTES)
    except OSError:
        return []
    finally:
        os.close(fd)
    return data.decode("utf-8", "surrogateescape").splitlines()
