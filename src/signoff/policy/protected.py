"""Protected paths: judging whether a call may write the gate's files or a harness's settings.

A gate whose policy an agent can rewrite (``sed -i 's/ask/allow/' signoff.toml``), whose
database it can edit (``sqlite3 signoff.db "UPDATE …"``) or whose harness it can
reconfigure (an auto-approve setting in ``.vscode/settings.json``, a server in
``.cursor/mcp.json``, a hook in ``.claude/settings.json``) protects nothing. So a write,
rename or delete of a protected path is a mandatory ask in every mode (reason code
``protected_path``): no rule, grant, reviewer or full mode admits it, and
``[policy] always_ask`` does not switch it off. A deny rule still denies.

Two kinds of path are protected:

* the harness files (``signoff.policy.harnesses``), matched like the sensitive paths
  (``signoff.policy.sensitive``: a pattern without a leading ``/`` at any depth, so
  ``.claude/settings.json`` is also ``~/.claude/settings.json``), plus what ``[policy]
  protected`` adds;
* the gate's own files, registered from the running configuration
  (``signoff.policy.guarded``). They are compared after resolution (symlinks and all,
  through the workspace guard), never by a name like ``signoff.*``; a path nothing can
  place (after ``cd $X``, no workspace) counts when its name is theirs.

A path counts as written when a write tool names it (``[tools.X] writes = true``), a
shell command writes, renames or deletes it (redirections, ``cp``/``mv``/``ln``/``tee``/
``dd of=``/``sed -i``/``truncate``/``rm``/``chmod``…, into a directory too: ``cp x .``
writes ``./x``), or removes a directory that holds it (``rm -r state``, ``git clean``),
and where the analysis cannot tell a read from a write (``signoff.shell.writes``):
a command with no model that names it (``perl -i``), a modelled command that runs code or
holds a part its model does not know (``awk -i inplace``), ``sqlite3`` opening it, ``ln``
or ``cp -l`` linking it (a hard link is the same file), a string in inline code (``python
-c "open('signoff.toml', 'w')"``).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from signoff.globs.pathglob import glob_to_regex, is_sensitive
from signoff.model import Effect, Reason, Risk, Step
from signoff.policy.guarded import Guarded, escape
from signoff.policy.harnesses import describe
from signoff.policy.workspace import PATH_MAX
from signoff.shell.globoverlap import can_name
from signoff.shell.wordglob import word_glob

if TYPE_CHECKING:
    from signoff.policy.asking import Asking
    from signoff.policy.matching import ToolView
    from signoff.policy.scope import ScopeResult
    from signoff.policy.spec import PolicyConfig, ToolSpec
    from signoff.policy.workspace import Workspace
    from signoff.shell import ShellAnalysis
    from signoff.shell.commands.models import Tree

SHOWN = 3  # protected paths named in a verdict's reasons
_LEAVES = frozenset({"mkdir", "touch"})  # on a directory: its content stays as it was


def protected_reasons(ev: Asking, view: ToolView, analysis: ShellAnalysis | None,
                      scope: ScopeResult) -> list[Reason]:
    """The ``protected_path`` reasons of the call ``ev`` judges (each a mandatory ask),
    recorded among its reasons; the risk becomes critical."""
    hits = protected_writes(ev.config, ev.policy.workspace, spec=view.spec, args=ev.args,
                            analysis=analysis, scope=scope)
    out: list[Reason] = []
    for given, what in hits[:SHOWN]:
        reason = Reason(step=Step.MANDATORY_ASK, code="protected_path", effect=Effect.ASK,
                        text=f"may write, rename or delete {given!r}, {what}")
        ev.reasons.append(reason)
        out.append(reason)
    if out:
        ev.raise_risk(Risk.CRITICAL)
    return out


def protected_writes(config: PolicyConfig, workspace: Workspace | None, *,
                     spec: ToolSpec | None, args: Mapping[str, Any],
                     analysis: ShellAnalysis | None,
                     scope: ScopeResult) -> list[tuple[str, str]]:
    """The protected paths a call may write, rename or delete: (as given, what it is)."""
    match = _matcher(config)
    found: dict[str, str] = {}

    def hit(given: str, resolved: str | None, *, directory: bool = True,
            into: Sequence[str] | None = None) -> None:
        # A word that may be no path at all (a script's text, a string in code) counts
        # by what it names as written, not as a glob (perl's s/[\s\S]*?/ is no glob).
        what = match.file(given, resolved, globs=directory)
        if what is None and resolved is not None and directory:
            what = match.directory(given, resolved, into)
        if what is not None:
            found.setdefault(given, what)

    if analysis is None:
        if spec is not None and spec.writes:
            if scope.written:
                for verdict in scope.written:
                    hit(verdict.given, verdict.resolved)
            else:  # no workspace: the paths as given, placed by nothing (a virtual
                for name in spec.paths:  # "/signoff.toml" is under a root no one knows)
                    for value in _as_list(args.get(name)):
                        text = str(value)
                        hit(text.lstrip("/") or text if spec.virtual else text, None)
        return list(found.items())
    # A shell command's writes: read with the analyser's modules.
    from signoff.shell.writes import (  # noqa: PLC0415
        find_writes,
        may_write,
        sources_into,
        worktree_deletes,
    )

    refs_by_path: dict[str, list[int]] = {}
    for ref in analysis.paths:
        if ref.write:
            refs_by_path.setdefault(ref.path, []).append(ref.command)
    written = [(v.given, v.resolved) for v in scope.written] if scope.written or workspace \
        else [(r.path, None) for r in analysis.paths if r.write and r.literal]
    finds = find_writes(analysis)
    for given, resolved in written:
        commands = refs_by_path.get(given, ())
        leaves = bool(commands) and all(  # mkdir -p state, touch rules: nothing changes;
            0 <= i < len(analysis.commands) and (  # find -delete: below, what it lists
                analysis.commands[i].basename in _LEAVES or i in finds) for i in commands)
        hit(given, resolved, directory=not leaves, into=sources_into(analysis, commands, given))
    for listing in finds.values():  # find . -name '*.toml' -exec sed -i … {} +, -delete
        for start in listing.starts:
            resolved = _place(workspace, start)
            what = match.listed(start, resolved, listing.tree)
            if what is not None:
                found.setdefault(start, what)
    for given in worktree_deletes(analysis):  # git clean -fdx: every untracked file
        what = match.directory(given, workspace.root, None) if workspace is not None else next(
            (f"a directory that may hold {g.role} ({g.path})" for g in match.guarded), None)
        if what is not None:
            found.setdefault(given, what)
    for ref in analysis.paths:  # cp x $X, > "$D/signoff.toml": by what the word can name
        if ref.write and not ref.literal and not ref.path.startswith("<"):
            what = match.pattern(ref.path)
            if what is not None:
                found.setdefault(ref.path, what)
    maybe = may_write(analysis)
    read = _placed_reads(scope) if workspace is not None and maybe else {}
    for given in maybe:
        places = read.get(given) or [_place(workspace, given)]
        for resolved in places:
            hit(given, resolved, directory=False)
    for name in analysis.code_names:  # open("signoff.toml", "w") in python -c
        hit(name, None, directory=False)
        if workspace is not None:
            hit(name, _place(workspace, name), directory=False)
    return list(found.items())


class _Matcher:
    """What a path is, if it is protected: the gate's file it resolves to, or the
    pattern it matches."""

    def __init__(self, patterns: tuple[str, ...], guarded: tuple[Guarded, ...]) -> None:
        self.guarded = guarded
        self.patterns = patterns
        self.exact: dict[str, Guarded] = {}
        for g in self.guarded:
            self.exact.setdefault(g.real, g)
            self.exact.setdefault(g.path, g)
        self.names = {posixpath.basename(g.path): g for g in self.guarded}
        self.names.update({posixpath.basename(g.real): g for g in self.guarded})
        self.globs = tuple(escape(n) for n in self.names) + tuple(
            escape(k) for k in self.exact) + self.patterns
        self.could = _prefilter(self.patterns)

    def file(self, given: str, resolved: str | None, *, globs: bool = True) -> str | None:
        if resolved is not None:
            found = self.exact.get(resolved)
            if found is not None:
                return found.role
        if len(given) > PATH_MAX:
            # As written it names no file (ENAMETOOLONG): only what a tool that normalises
            # it first would open counts (once; a megabyte of text is not walked thrice).
            if resolved is None:
                normal = posixpath.normpath(given)
                return self.file(normal, None, globs=globs) if len(normal) <= PATH_MAX \
                    else None
            if len(resolved) > PATH_MAX or not self.could(resolved):
                return None
            pattern = is_sensitive(resolved, self.patterns)
            return describe(pattern) if pattern is not None else None
        normal = posixpath.normpath(os.path.expanduser(given)) if given else ""
        if resolved is None and normal:
            found = self.exact.get(normal) if normal.startswith("/") else \
                self.names.get(posixpath.basename(normal))
            if found is not None:
                return f"{found.role} ({found.path}) or a file of its name"
        for path in (given, resolved):
            pattern = is_sensitive(path, self.patterns) if path and self.could(path) else None
            if pattern is not None:
                return describe(pattern)
        return self.pattern(given) if globs and _has_glob(given) else None

    def pattern(self, word: str) -> str | None:
        """A glob, or a word with an expansion, by the protected paths it can name."""
        hit = can_name(word if _has_glob(word) else word_glob(word), self.globs)
        if hit is None:
            return None
        for g in self.guarded:
            if hit in (escape(g.path), escape(g.real), escape(posixpath.basename(g.path)),
                       escape(posixpath.basename(g.real))):
                return f"a glob that can name {g.role} ({g.path})"
        return "a glob that can name " + describe(hit)

    def listed(self, given: str, resolved: str | None, tree: Tree | None) -> str | None:
        """What a ``find`` that writes the files it lists changes under ``given``: a
        protected file beneath it that its tests (``-name``, ``-maxdepth``) admit."""
        if tree is None:  # -maxdepth 0: the starting point itself
            return None
        from signoff.shell.writes import admits  # noqa: PLC0415 (a shell command's find)

        if resolved is None:  # nowhere known: any of the gate's files it could list
            for g in self.guarded:
                if admits(tree, posixpath.basename(g.path)):
                    return f"a directory that may hold {g.role} ({g.path}), listed and written"
            return None
        prefix = resolved.rstrip("/") + "/"
        for g in self.guarded:
            for path in (g.real, g.path):
                if path.startswith(prefix) and admits(tree, path[len(prefix):]):
                    return f"a directory whose files it writes holds {g.role} ({g.path})"
        if not os.path.isdir(resolved):
            return None
        parts = [p for p in resolved.split("/") if p]
        for pattern in self.patterns:
            held = _holds(resolved, parts, pattern)
            if held is not None and admits(tree, posixpath.relpath(held, resolved)):
                return f"a directory whose files it writes holds {held}, " + describe(pattern)
        return None

    def directory(self, given: str, resolved: str, into: Sequence[str] | None) -> str | None:
        """A write to a directory: into it under the sources' names (``cp x DIR``), or of
        the directory itself (``rm -r DIR``, ``mv DIR x``), which holds what it holds."""
        if into is not None:  # a directory now, or one the line makes first (mkdir -p d)
            for source in into:
                if source in (".", "..") or source.endswith(("/.", "/..")):
                    return self.directory(given, resolved, None)  # cp -r x/. DIR: its content
                name = posixpath.basename(posixpath.normpath(source))
                inside = posixpath.join(resolved, name)  # cp -r x DIR: DIR/x and beneath
                what = self.file(posixpath.join(given, name), inside) or \
                    self.directory(posixpath.join(given, name), inside, None)
                if what is not None:
                    return what
            return None
        prefix = resolved.rstrip("/") + "/"
        for g in self.guarded:
            if g.real.startswith(prefix) or g.path.startswith(prefix):
                return f"a directory that holds {g.role} ({g.path})"
        if not os.path.isdir(resolved):
            return None
        parts = [p for p in resolved.split("/") if p]
        for pattern in self.patterns:
            held = _holds(resolved, parts, pattern)
            if held is not None:
                return f"a directory that holds {held}, " + describe(pattern)
        return None


_MATCHERS: dict[int, tuple[PolicyConfig, _Matcher]] = {}


def _matcher(config: PolicyConfig) -> _Matcher:
    """The config's matcher, built once: keyed by the (immutable) config itself, not by
    hashing its hundred patterns on every call."""
    kept = _MATCHERS.get(id(config))
    if kept is None or kept[0] is not config:
        if len(_MATCHERS) >= 16:
            _MATCHERS.clear()
        kept = _MATCHERS[id(config)] = (config, _Matcher(config.protected, config.guarded))
    return kept[1]


@lru_cache(maxsize=16)
def _prefilter(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """A quick test that ``path`` may match one of ``patterns`` (the full match is a
    regex over them all): its last component is a pattern's literal last one, or it lies
    under a pattern's ``DIR/**``, or a pattern's last component is itself a glob."""
    names: set[str] = set()
    dirs: set[str] = set()
    wild: list[str] = []
    for pattern in patterns:
        parts = [p for p in pattern.split("/") if p]
        if not parts:
            continue
        last = parts[-1]
        if last == "**" and len(parts) > 1 and not _has_glob(parts[-2]):
            dirs.add(parts[-2])
            names.add(parts[-2])
        elif _has_glob(last):
            wild.append(last)
        else:
            names.add(last)
    if any("**" in w or w in ("*", "?") for w in wild):
        return lambda path: True
    rx = re.compile("|".join(glob_to_regex(w) for w in wild)) if wild else None

    def could(path: str) -> bool:
        parts = posixpath.normpath(path).split("/")
        base = parts[-1]
        return base in names or (rx is not None and rx.fullmatch(base) is not None) or (
            bool(dirs) and not dirs.isdisjoint(parts))
    return could


def _holds(directory: str, parts: list[str], pattern: str) -> str | None:
    """The file of ``pattern`` under ``directory``, if one is there: ``pattern``'s fixed
    head (before any glob) joined to the directory, or its rest when the directory is
    already part of it (``.claude`` holds ``settings.json`` of ``.claude/settings.json``)."""
    if pattern.startswith("/"):
        return pattern if pattern.startswith(directory.rstrip("/") + "/") else None
    words = pattern.split("/")
    fixed: list[str] = []
    for word in words:
        if _has_glob(word):
            break
        fixed.append(word)
    if not fixed:
        return None
    for k in range(len(fixed)):
        if k and parts[-k:] != fixed[:k]:
            continue
        candidate = posixpath.join(directory, *fixed[k:]) if fixed[k:] else None
        if candidate is not None and os.path.lexists(candidate):
            return candidate
    return None


def _placed_reads(scope: ScopeResult) -> dict[str, list[str | None]]:
    placed: dict[str, list[str | None]] = {}
    for verdict in scope.read:
        placed.setdefault(verdict.given, []).append(verdict.resolved)
    return placed


def _place(workspace: Workspace | None, path: str) -> str | None:
    if workspace is None:
        return None
    verdict = workspace.check(path)
    return verdict.resolved if verdict.code is None else None


def _has_glob(word: str) -> bool:
    return any(c in word for c in "*?[")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
