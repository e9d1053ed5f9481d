"""Writes a shell line may make that its path references do not class as writes.

The protected-path judgement (``signoff.policy.protected``) must not miss a write of the
gate's files, so it reads the analysis for more than ``PathRef.write``: the files
``cp``/``mv``/``ln``/``install`` put into a directory under their own names (``cp x .``
writes ``./x``), what a ``find`` that writes what it lists (``-delete``, ``-exec sed -i
{}``) lists, the untracked files ``git clean`` and ``git stash -u`` delete, and where the
analysis cannot tell a read from a write: a command with no model, a modelled one that
runs code or holds a part its model does not know, ``sqlite3``'s database, what ``ln`` or
``cp -l`` links (a hard link is the same file).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from signoff.shell.commands import find as find_model
from signoff.shell.commands.models import Kind, Listing, Tree

if TYPE_CHECKING:
    from signoff.shell.results import ShellAnalysis

# Commands that put a file into a directory operand under its own name (cp x DIR).
_INTO = frozenset({"cp", "mv", "ln", "install"})


def sources_into(analysis: ShellAnalysis, commands: Iterable[int], given: str) -> list[str] | None:
    """For the target of ``cp``/``mv``/``ln``/``install``: the sources it puts into it
    when it is a directory; ``None`` for any other written path."""
    for index in commands:
        if not 0 <= index < len(analysis.commands):
            continue
        command = analysis.commands[index]
        inv = command.invocation
        if command.basename not in _INTO or inv is None or not inv.modelled:
            continue
        targets = [p for p in inv.parts if p.value is not None and (
            p.option in ("-t", "--target-directory") if command.basename == "mv" else
            p.kind.value == "write")]
        if command.basename == "mv" and not targets:
            operands = [p for p in inv.parts if p.option is None and p.value is not None]
            targets = operands[-1:]
        if not any(p.value == given or posixpath.normpath(p.value or "") ==
                   posixpath.normpath(given) for p in targets):
            continue
        return [p.value for p in inv.parts if p.value is not None and p not in targets
                and p.option is None]
    return None


def may_write(analysis: ShellAnalysis) -> list[str]:
    """Paths a command names that the analysis does not class as written, but that it
    may write: a command with no model, a modelled one that runs code or holds a part its
    model does not know, sqlite3's database, what ln links."""
    out: list[str] = []
    blind: set[int] = set()
    for index, command in enumerate(analysis.commands):
        inv = command.invocation
        if inv is None or not inv.modelled:
            blind.add(index)
            continue
        name = command.basename
        for part in inv.parts:
            kind = part.kind
            if kind is Kind.EXEC or kind is Kind.UNKNOWN:
                blind.add(index)
            if part.option is not None or not part.literal:
                continue
            if part.value is None:
                if kind is Kind.UNKNOWN:  # git frobnicate signoff.toml
                    out.append(part.word)
            elif (inv.model == "sqlite3" and part.declared) or name == "ln":
                out.append(part.value)
        if name == "cp" and _links(command.argv):  # cp -l: a hard link too
            out.extend(p.value for p in inv.parts if p.value is not None and p.option is None
                       and p.kind is Kind.READ and p.literal)
        if name == "ln" and not any(p.kind is Kind.WRITE for p in inv.parts):
            out.extend(posixpath.basename(p.value) for p in inv.parts  # ln -s x: ./x
                       if p.value is not None and p.option is None)
    if blind:
        for ref in analysis.paths:
            if not ref.write and ref.literal and ref.command in blind:
                out.append(ref.path)
    return list(dict.fromkeys(out))


def find_writes(analysis: ShellAnalysis) -> dict[int, Listing]:
    """The ``find`` commands that write what they list (``-delete``, ``-exec CMD {}``
    where CMD writes it), by index, with what they list."""
    marked = {ref.command for ref in analysis.paths if ref.write and "{}" in ref.path}
    out: dict[int, Listing] = {}
    for index, command in enumerate(analysis.commands):
        inv = command.invocation
        if command.basename != "find" or inv is None or command.deny_only:
            continue
        if index in marked or any(p.option == "-delete" for p in inv.parts):
            listing = find_model.listing(command.argv, command.literal)
            out[index] = listing if listing is not None else Listing((".",), Tree())
    return out


def admits(tree: Tree, relative: str) -> bool:
    """Whether a find with ``tree``'s tests lists ``relative`` (a path beneath its start),
    or a directory above it (whose removal takes it along)."""
    parts = [p for p in relative.split("/") if p]
    if not parts or (tree.depth is not None and len(parts) > tree.depth and not tree.include):
        return False

    def matches(name: str, globs: tuple[str, ...]) -> bool:
        if tree.fold:
            return any(fnmatch.fnmatch(name.lower(), g.lower()) for g in globs)
        return any(fnmatch.fnmatchcase(name, g) for g in globs)

    if tree.exclude_dirs and any(matches(p, tree.exclude_dirs) for p in parts[:-1]):
        return False
    if tree.exclude and matches(parts[-1], tree.exclude):
        return False
    if not tree.include:
        return True
    depth = len(parts) if tree.depth is None else min(len(parts), tree.depth)
    return any(matches(p, tree.include) for p in parts[:depth])


def _links(argv: Sequence[str]) -> bool:
    """``cp -l`` / ``-s``: the copy is a link to its source."""
    for word in argv[1:]:
        if word == "--":
            break
        if word in ("--link", "--symbolic-link") or (
                word.startswith("-") and not word.startswith("--")
                and any(c in word[1:].split("S", 1)[0].split("t", 1)[0] for c in "ls")):
            return True
    return False


_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                         "--exec-path", "--config-env", "--super-prefix"})


def worktree_deletes(analysis: ShellAnalysis) -> list[str]:
    """git commands that delete the working tree's untracked (and ignored) files, where a
    database or a local harness setting lives: ``git clean`` (not ``-n``), ``git stash
    -u``/``-a``."""
    out: list[str] = []
    for command in analysis.commands:
        argv = command.argv
        if command.basename != "git" or command.deny_only:
            continue
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            i += 2 if argv[i] in _GIT_VALUED else 1
        if i >= len(argv):
            continue
        sub, rest = argv[i], argv[i + 1:]
        shorts = "".join(w[1:] for w in rest if w.startswith("-") and not w.startswith("--"))
        cleans = sub == "clean" and "n" not in shorts and "--dry-run" not in rest
        stashes = sub == "stash" and (not rest or rest[0] in ("push", "save")
                                      or rest[0].startswith("-")) and (
            "u" in shorts or "a" in shorts or bool({"--include-untracked", "--all"} & set(rest)))
        if cleans or stashes:
            out.append(" ".join(argv))
    return out
