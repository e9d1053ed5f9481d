"""A command line as the patterns an allow rule could admit it by, from narrow to wide.

Rule suggestions (``signoff.policy.suggest``) learn from approved commands, and the
rule they propose must be as narrow as the history allows. Each simple command is
written four ways: ``exact`` (its own words, escaped: admits only itself), ``paths``
(each path turned into a glob of its kind inside the workspace — ``reproduce.py`` →
``*.py``, ``/testbed/src/x.py`` → ``/testbed/**/*.py``), ``shape`` (that, and every other
operand and option value ``*``), and ``wide`` (its name and subcommand, then ``*``).
Paths are found by the command's model (``signoff.shell.commands``) where it has one,
by their look otherwise; a path outside the workspace, or climbing out of it, stays
literal.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from signoff.shell import SimpleCommand
from signoff.shell.commands.models import Kind

_PYTHONS = re.compile(r"python(?:\d+(?:\.\d+)?)?")
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_:-]*")
_FILE_NAME = re.compile(r"[\w.+-]*\.([A-Za-z][A-Za-z0-9]{0,7})")
_ATTACHED = re.compile(r"(--?[A-Za-z][\w.-]*=)(.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Shapes:
    """One simple command's patterns (command-pattern strings) and its head."""

    head: str  # name and subcommand: "git log", "python -m pytest", "javac"
    exact: str
    paths: str  # only the paths turned into globs
    shape: str
    wide: str


def escape(word: str) -> str:
    """A glob that matches ``word`` alone."""
    return re.sub(r"([*?\[])", r"[\1]", word)


def path_glob(path: str, root: str | None) -> str:
    """The glob a path generalizes to: its kind (extension) in its place in the workspace."""
    match = _FILE_NAME.fullmatch(posixpath.basename(path))
    leaf = f"*.{match.group(1)}" if match else "*"
    if path.startswith("/"):
        base = (root or "").rstrip("/")
        norm = posixpath.normpath(path)
        if not base or not (norm == base or norm.startswith(base + "/")):
            return escape(path)  # outside the workspace: only itself
        return f"{escape(base)}/**/{leaf}" if match else f"{escape(base)}/**"
    if ".." in path.split("/") or path.startswith("~") or "$" in path:
        return escape(path)
    if "/" not in path.rstrip("/"):
        return leaf
    return f"**/{leaf}"


def _looks_like_path(word: str) -> bool:
    if word.startswith("-") or any(c.isspace() for c in word):
        return False
    return "/" in word or _FILE_NAME.fullmatch(word) is not None


def head_length(command: SimpleCommand) -> int:
    """How many leading words name what the command is: ``git log``, ``python -m pytest``."""
    argv = command.argv
    invocation = command.invocation
    if invocation is not None and invocation.subcommand_index:
        return invocation.subcommand_index + 1
    if _PYTHONS.fullmatch(command.basename) and len(argv) >= 3 and argv[1] == "-m":
        return 3
    modelled = invocation is not None and invocation.modelled
    if not modelled and len(argv) >= 2 and _SUBCOMMAND.fullmatch(argv[1]):
        return 2
    return 1


def shapes(command: SimpleCommand, root: str | None) -> Shapes:
    """The three patterns of one simple command."""
    argv = command.argv
    size = head_length(command)
    paths: set[int] = set()
    invocation = command.invocation
    if invocation is not None and invocation.modelled:
        for part in invocation.parts:
            if part.value is None or not part.literal:
                continue
            if part.kind in (Kind.READ, Kind.WRITE) or part.path or \
                    (part.kind is Kind.EXEC and part.declared):
                # the value is the part's own word, or the word after its option
                paths.add(part.index if part.word.endswith(part.value) and
                          part.option is None else part.index + 1)
    words: list[str] = [escape(w) for w in argv[:size]]
    globbed: list[str] = list(words)
    for index in range(size, len(argv)):
        word = argv[index]
        if not command.literal[index]:
            words.append(escape(word))
            globbed.append(escape(word))
        elif index in paths or (not (invocation and invocation.modelled)
                                and _looks_like_path(word)):
            words.append(path_glob(word, root))
            globbed.append(words[-1])
        elif word.startswith("-"):
            attached = _ATTACHED.fullmatch(word)
            words.append(f"{escape(attached.group(1))}*" if attached else escape(word))
            globbed.append(escape(word))
        else:
            words.append("*")
            globbed.append(escape(word))
    head = " ".join(argv[:size])
    return Shapes(head=head, exact=join(escape(w) for w in argv), paths=join(globbed),
                  shape=join(words), wide=join([*words[:size], "*"]))


_PLAIN = re.compile(r"[\w@%+=:,./*?\[\]!-]+")


def join(words: Iterable[str]) -> str:
    """Pattern words as one string: quoted only where the shell would split or expand."""
    return " ".join(w if _PLAIN.fullmatch(w) else shlex.quote(w) for w in words)
