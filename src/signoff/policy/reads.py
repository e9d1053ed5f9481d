"""What a call reads that holds credentials: the paths behind ``secret_read``.

A file is read by name (``cat .env``, ``read_file("~/.ssh/id_rsa")``, a string in
inline code: ``python -c 'open(".env")'``), through a shell
glob (``cat .en?``), through a link, or out of a git object (``git show HEAD:.env``,
an MCP tool's ``revision``), or by a recursive search of a directory that holds it
(``grep -r TOKEN .``, ``signoff.shell.treewalk``): each counts. A glob counts by what it
expands to in the workspace; one that was not expanded (no workspace, a prefix outside
it), and a tool's path argument with glob characters, by what it can name
(``signoff.shell.globoverlap``).
Variables that hold credentials are a shell concern (``signoff.shell.concerns``).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from signoff.globs.pathglob import is_secret
from signoff.policy.scope import ScopeResult
from signoff.policy.spec import ToolSpec
from signoff.shell.globoverlap import can_name, has_glob
from signoff.shell.ignores import repository_top
from signoff.shell.treewalk import Budget, secret_under
from signoff.shell.wordglob import word_glob

if TYPE_CHECKING:
    from signoff.shell import ShellAnalysis
    from signoff.shell.commands import Tree

MAX_GLOBS = 16  # unexpanded globs judged one by one; past them, the call asks
SHOWN = 3  # paths named in a verdict's reasons


def secret_reads(secrets: tuple[str, ...], spec: ToolSpec | None, args: Mapping[str, Any],
                 analysis: ShellAnalysis | None, scope: ScopeResult, *,
                 expanded: bool) -> list[tuple[str, str, str | None]]:
    """The paths this call reads that hold credentials, each with the pattern it matched
    and, when a search of a directory reads it, that directory.
    ``expanded``: the workspace guard expanded the shell's globs (there is a workspace),
    so only those it left as written (``scope.unexpanded``) are judged as patterns."""
    found: dict[str, tuple[str, str | None]] = {}
    budget = Budget()  # the directories this call searches share one walk's bound

    def check(path: str, hit: str | None, searched: str | None = None) -> None:
        if hit is not None:
            found.setdefault(path, (hit, searched))

    if analysis is not None:
        reads = [r.path for r in analysis.paths if not r.write and r.literal and not r.stat]
        for path in [*reads, *analysis.code_names]:  # code_names: open(".env") in python -c
            check(path, is_secret(path, secrets))
        for path in analysis.code_names:  # glob.glob(".e*") in python -c
            if has_glob(path):
                check(path, can_name(path, secrets))
        for ref in analysis.paths:  # cat .env$NOPE, cat "$HOME/.aws/credentials"
            if not (ref.literal or ref.write or ref.stat or ref.path.startswith("<")):
                check(ref.path, can_name(word_glob(ref.path), secrets))
        for word, literal in _unknown_words(analysis):  # curl "file://$HOME/.aws/…"
            check(word, (is_secret(word, secrets) or (
                can_name(word, secrets) if has_glob(word) else None)) if literal
                else can_name(word_glob(word), secrets))
        for verdict in scope.read:  # a glob's matches; where a link leads
            check(verdict.given, is_secret(verdict.given, secrets) or (
                None if verdict.resolved is None else is_secret(verdict.resolved, secrets)))
        blind = list(dict.fromkeys(
            scope.unexpanded if expanded else [path for path in reads if has_glob(path)]))
        for word in blind[:MAX_GLOBS]:
            check(word, can_name(word, secrets))
        if len(blind) > MAX_GLOBS:
            check(blind[MAX_GLOBS], f"one of {len(blind)} globs, too many to judge")
        trees = [(v.given, v.resolved, tree) for v, tree in scope.trees] if expanded else [
            (r.path, None, r.tree) for r in analysis.paths if r.tree is not None and r.literal]
        for given, resolved, tree in trees[:MAX_GLOBS]:  # grep -r x ., rg x ~/.ssh
            check(given, can_name(given.rstrip("/") + "/**", secrets))
            _check_tree(check, given, resolved, tree, secrets=secrets, budget=budget)
    elif spec is not None and not spec.writes:
        for name in spec.paths:
            for value in as_list(args.get(name)):
                text = str(value)  # a glob for a search tool (grep's glob, glob's pattern)
                check(text, is_secret(text, secrets) or (
                    can_name(text, secrets) if has_glob(text) else None))
            for resolved in scope.resolved.get(name, ()):
                check(resolved, is_secret(resolved, secrets))
        narrowed = any(has_glob(str(value)) for name in spec.paths if name not in spec.trees
                       for value in as_list(args.get(name)))  # grep(glob="*.py")
        for name in () if narrowed else spec.trees:
            roots = scope.resolved.get(name) or (
                [scope.root] if args.get(name) is None and spec.virtual and scope.root else [])
            for value in as_list(args.get(name)) if not roots else ():  # no workspace
                check(str(value), can_name(str(value).rstrip("/") + "/**", secrets))
            from signoff.shell.commands import Tree  # noqa: PLC0415 (a search tool's)

            for root in roots[:MAX_GLOBS]:
                _check_tree(check, root, root, Tree(), secrets=secrets, budget=budget)
    for name in spec.objects if spec is not None else ():
        from signoff.shell.commands.git import object_path  # noqa: PLC0415

        for value in as_list(args.get(name)):
            stored = object_path(value) if isinstance(value, str) else None
            if stored is not None:  # "HEAD:.env": .env as committed
                check(value, is_secret(stored, secrets))
    return [(path, hit, searched) for path, (hit, searched) in found.items()][:SHOWN]


def _unknown_words(analysis: ShellAnalysis) -> list[tuple[str, bool]]:
    """Words a command's model cannot class (``git hash-object .env``, an expansion that
    may be a URL or a path), and whether each is literal: each may name a file the
    command reads."""
    from signoff.shell.commands import Kind  # noqa: PLC0415 (loaded with the analyser)

    return [(part.word, part.literal) for cmd in analysis.commands
            if cmd.invocation is not None for part in cmd.invocation.parts
            if part.kind is Kind.UNKNOWN and part.value is None]


def _check_tree(check: Callable[[str, str | None, str | None], None], given: str,
                resolved: str | None,
                tree: Tree, *, secrets: tuple[str, ...], budget: Budget) -> None:
    """A directory read file by file: the first secret under it, if any."""
    if tree.top and resolved is not None:  # git add -A: the whole repository
        top = repository_top(resolved) if os.path.isdir(resolved) else None
        if top is not None and top != os.path.realpath(resolved):
            given, resolved = top, top
    under = None if resolved is None or not os.path.isdir(resolved) else secret_under(
        resolved, secrets, tree, budget=budget)
    if under is not None:
        check(posixpath.join(given, under[0]), under[1], given)


def as_list(value: Any) -> list[Any]:
    """An argument that may hold one value or a list of them, as a list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
