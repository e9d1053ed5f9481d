"""Protected paths: the files the gate itself depends on, and the agent harnesses' settings.

A gate whose policy an agent can rewrite (``sed -i 's/ask/allow/' signoff.toml``), whose
database it can edit (``sqlite3 signoff.db "UPDATE …"``) or whose harness it can
reconfigure (an auto-approve setting in ``.vscode/settings.json``, a server in
``.cursor/mcp.json``, a hook in ``.claude/settings.json``) protects nothing. So a write,
rename or delete of a protected path is a mandatory ask in every mode (reason code
``protected_path``): no rule, grant, reviewer or full mode admits it, and
``[policy] always_ask`` does not switch it off. A deny rule still denies.

Two kinds of path are protected:

* the harness files below (``HARNESSES``), matched like the sensitive paths
  (``signoff.policy.sensitive``: a pattern without a leading ``/`` at any depth, so
  ``.claude/settings.json`` is also ``~/.claude/settings.json``), plus what ``[policy]
  protected`` adds;
* the gate's own files, registered from the running configuration (``guard_*``): the
  policy file it loaded (``load_policy_file``), the SQLite database of its store and that
  database's ``-wal``, ``-shm`` and ``-journal`` (``Gate``), and the files the server's
  configuration names (``[notify]``'s ``ca_file``). They are compared after resolution
  (symlinks and all, through the workspace guard), never by a name like ``signoff.*``; a
  path nothing can place (after ``cd $X``, no workspace) counts when its name is theirs.
  A read of the database is a ``secret_read``: its paths join the policy's secrets.

A path counts as written when a write tool names it (``[tools.X] writes = true``), a
shell command writes, renames or deletes it (redirections, ``cp``/``mv``/``ln``/``tee``/
``dd of=``/``sed -i``/``truncate``/``rm``/``chmod``…, into a directory too: ``cp x .``
writes ``./x``), or removes a directory that holds it (``rm -r state``, ``git clean``),
and where the analysis cannot tell a read from a write: a command with no model that names
it (``perl -i``), a modelled command that runs code or holds a part its model does not
know (``awk -i inplace``), ``sqlite3`` opening it, ``ln`` or ``cp -l`` linking it (a hard
link is the same file), a string in inline code (``python -c "open('signoff.toml',
'w')"``).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from signoff.model import Effect, Reason, Risk, Step
from signoff.policy.commands import find as find_model
from signoff.policy.commands.records import Listing, Tree
from signoff.policy.globmeet import can_name
from signoff.policy.patterns import glob_to_regex
from signoff.policy.sensitive import is_sensitive
from signoff.policy.wordglob import word_glob

if TYPE_CHECKING:
    from signoff.policy.asking import Asking
    from signoff.policy.matching import ToolView
    from signoff.policy.scope import ScopeResult
    from signoff.policy.shell import ShellAnalysis
    from signoff.policy.spec import PolicyConfig, ToolSpec
    from signoff.policy.workspace import Workspace

# The settings, permission and MCP files of the agent harnesses people run, project and
# user forms (the user form of ``.claude/settings.json`` is ``~/.claude/settings.json``;
# ``Code/User/settings.json`` is VS Code's under ``~/.config`` and ``~/Library/Application
# Support`` alike). What they hold decides what the agent may run without asking.
HARNESSES: Mapping[str, tuple[str, ...]] = {
    "Claude Code": (".claude/settings.json", ".claude/settings.local.json", ".claude.json",
                    ".mcp.json", ".claude/hooks/**", "claude-code/managed-settings.json",
                    "claude-code/managed-mcp.json", "ClaudeCode/managed-settings.json",
                    "ClaudeCode/managed-mcp.json"),
    "Cursor": (".cursor/mcp.json", ".cursor/cli.json", ".cursor/cli-config.json",
               ".cursor/permissions.json", ".cursor/hooks.json",
               ".config/cursor/cli-config.json", "Cursor/User/settings.json",
               "Cursor/User/mcp.json"),
    "VS Code": (".vscode/settings.json", ".vscode/mcp.json", "*.code-workspace",
                "Code/User/settings.json", "Code/User/mcp.json",
                "Code - Insiders/User/settings.json", "Code - Insiders/User/mcp.json",
                "VSCodium/User/settings.json", "VSCodium/User/mcp.json"),
    "Codex": (".codex/config.toml", ".codex/*.config.toml", ".codex/requirements.toml",
              ".codex/hooks.json", ".codex/rules/**"),
    "Gemini CLI": (".gemini/settings.json", "gemini-cli/settings.json",
                   "gemini-cli/system-defaults.json"),
    "Windsurf": (".codeium/windsurf/mcp_config.json", ".codeium/windsurf/hooks.json",
                 ".windsurf/hooks.json", "Windsurf/User/settings.json"),
    "Continue": (".continue/config.yaml", ".continue/config.json", ".continue/config.ts",
                 ".continue/permissions.yaml", ".continue/mcpServers/**"),
    "Zed": (".zed/settings.json", ".config/zed/settings.json"),
    "Cline": ("saoudrizwan.claude-dev/settings/**", "cline_mcp_settings.json",
              ".clinerules/hooks/**"),
    "OpenCode": ("opencode.json", "opencode.jsonc", ".opencode/opencode.json",
                 ".config/opencode/opencode.json"),
    "Roo Code": (".roo/mcp.json",),
    "Kiro": (".kiro/settings/mcp.json",),
    "Amp": (".amp/settings.json", ".config/amp/settings.json"),
}
DEFAULT_PROTECTED: tuple[str, ...] = tuple(p for files in HARNESSES.values() for p in files)
_HARNESS_OF = {p: name for name, files in HARNESSES.items() for p in files}
# What a SQLite database keeps beside its file: the write-ahead log, its index, the
# rollback journal. Each is the database as much as the file is.
DATABASE_SUFFIXES = ("", "-wal", "-shm", "-journal")
_DATABASE_SECRETS = ("", "-wal", "-journal")  # the ones that hold rows
SHOWN = 3  # protected paths named in a verdict's reasons
# Commands that put a file into a directory operand under its own name (cp x DIR).
_INTO = frozenset({"cp", "mv", "ln", "install"})
_LEAVES = frozenset({"mkdir", "touch"})  # on a directory: its content stays as it was


@dataclass(frozen=True, slots=True)
class Guarded:
    """One file of the gate's own: as configured (absolute), resolved, and what it is."""

    path: str
    real: str
    role: str


# ---- registering the running configuration's files ------------------------------------------


def guard_files(config: PolicyConfig, paths: Iterable[str | os.PathLike[str]], role: str, *,
                secret: bool = False) -> PolicyConfig:
    """``config`` with ``paths`` (relative to the current directory) protected as ``role``;
    with ``secret``, reading one is a ``secret_read`` too."""
    guarded = list(config.guarded)
    secrets = list(config.secrets)
    known = {g.real for g in guarded}
    for given in paths:
        path = os.path.abspath(os.fspath(given))
        real = os.path.realpath(path)
        if real not in known:
            known.add(real)
            guarded.append(Guarded(path=path, real=real, role=role))
        if secret:  # absolute, and as a relative path names it where nothing resolves it
            forms = [path, real, *_relative(config, path, real)]
            secrets.extend(escape(f) for f in forms if escape(f) not in secrets)
    if len(guarded) == len(config.guarded) and len(secrets) == len(config.secrets):
        return config
    return replace(config, guarded=tuple(guarded), secrets=tuple(secrets))


def _relative(config: PolicyConfig, path: str, real: str) -> list[str]:
    """The relative name of a file: from the workspace root when it lies inside (a string
    in inline code is read from there); from the current directory with no workspace."""
    if config.workspace is None:
        return [os.path.relpath(path)]
    root = os.path.realpath(os.path.expanduser(config.workspace.root))
    if not real.startswith(root.rstrip("/") + "/"):
        return []
    return [posixpath.relpath(real, root)]


def guard_policy_file(config: PolicyConfig, path: str | os.PathLike[str]) -> PolicyConfig:
    """The policy file ``config`` was loaded from: agents may read it, never change it."""
    return guard_files(config, [path], "the policy file this gate loaded")


def guard_database(config: PolicyConfig, path: str | os.PathLike[str]) -> PolicyConfig:
    """A SQLite database of the gate's, and its -wal/-shm/-journal: never written, and its
    rows (requests, decisions, audit, sign-in records) never read by an agent."""
    base = os.fspath(path)
    config = guard_files(config, [base + s for s in DATABASE_SUFFIXES if s not in
                                  _DATABASE_SECRETS], "the gate's database")
    return guard_files(config, [base + s for s in _DATABASE_SECRETS], "the gate's database",
                       secret=True)


def database_path(store: object) -> str | None:
    """The file of a SQLite store (``SqliteStore.path``, a ``file:`` URI's path), or
    ``None`` for a store with no file (PostgreSQL, ``:memory:``)."""
    path = getattr(store, "path", None)
    if not isinstance(path, str) or not path or path == ":memory:":
        return None
    if path.startswith("file:"):
        parsed = urlparse(path)
        if "mode=memory" in parsed.query:
            return None
        path = parsed.path or path[5:].split("?", 1)[0]
    return path or None


def guard_store(config: PolicyConfig, store: object) -> PolicyConfig:
    """``config`` with the database file of ``store`` protected (when it has one)."""
    path = database_path(store)
    return config if path is None else guard_database(config, path)


def guard_gate(gate: Any, paths: Iterable[str | os.PathLike[str] | None], role: str) -> None:
    """Protect files a running gate's configuration names (the server's ``[notify]``
    ``ca_file``) in the policies it judges with."""
    named = [p for p in paths if p]
    if not named:
        return
    for policy in (gate.policy, gate.revalidation_policy):
        policy.config = guard_files(policy.config, named, role)


def escape(path: str) -> str:
    """``path`` as a pattern that matches only itself (its glob characters quoted)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def extra_pattern(pattern: str) -> str:
    """A ``[policy] protected`` pattern as matched: ``~/x`` is ``x`` in any home (the
    agent's tools may run as another user than the gate)."""
    return pattern[2:] if pattern.startswith("~/") else pattern


# ---- judging a call ------------------------------------------------------------------------


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
    match = _matcher(config.protected, config.guarded)
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

    refs_by_path: dict[str, list[int]] = {}
    for ref in analysis.paths:
        if ref.write:
            refs_by_path.setdefault(ref.path, []).append(ref.command)
    written = [(v.given, v.resolved) for v in scope.written] if scope.written or workspace \
        else [(r.path, None) for r in analysis.paths if r.write and r.literal]
    finds = _find_writes(analysis)
    for given, resolved in written:
        commands = refs_by_path.get(given, ())
        leaves = bool(commands) and all(  # mkdir -p state, touch rules: nothing changes;
            0 <= i < len(analysis.commands) and (  # find -delete: below, what it lists
                analysis.commands[i].basename in _LEAVES or i in finds) for i in commands)
        hit(given, resolved, directory=not leaves, into=_into(analysis, commands, given))
    for listing in finds.values():  # find . -name '*.toml' -exec sed -i … {} +, -delete
        for start in listing.starts:
            resolved = _place(workspace, start)
            what = match.listed(start, resolved, listing.tree)
            if what is not None:
                found.setdefault(start, what)
    for given in _worktree_deletes(analysis):  # git clean -fdx: every untracked file
        what = match.directory(given, workspace.root, None) if workspace is not None else next(
            (f"a directory that may hold {g.role} ({g.path})" for g in match.guarded), None)
        if what is not None:
            found.setdefault(given, what)
    for ref in analysis.paths:  # cp x $X, > "$D/signoff.toml": by what the word can name
        if ref.write and not ref.literal and not ref.path.startswith("<"):
            what = match.pattern(ref.path)
            if what is not None:
                found.setdefault(ref.path, what)
    read = _placed_reads(scope) if workspace is not None else {}
    for given in _may_write(analysis):
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
        normal = posixpath.normpath(os.path.expanduser(given)) if given else ""
        if resolved is None and normal:
            found = self.exact.get(normal) if normal.startswith("/") else \
                self.names.get(posixpath.basename(normal))
            if found is not None:
                return f"{found.role} ({found.path}) or a file of its name"
        for path in (given, resolved):
            pattern = is_sensitive(path, self.patterns) if path and self.could(path) else None
            if pattern is not None:
                return _harness(pattern)
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
        return "a glob that can name " + _harness(hit)

    def listed(self, given: str, resolved: str | None, tree: Tree | None) -> str | None:
        """What a ``find`` that writes the files it lists changes under ``given``: a
        protected file beneath it that its tests (``-name``, ``-maxdepth``) admit."""
        if tree is None:  # -maxdepth 0: the starting point itself
            return None
        if resolved is None:  # nowhere known: any of the gate's files it could list
            for g in self.guarded:
                if _admits(tree, posixpath.basename(g.path)):
                    return f"a directory that may hold {g.role} ({g.path}), listed and written"
            return None
        prefix = resolved.rstrip("/") + "/"
        for g in self.guarded:
            for path in (g.real, g.path):
                if path.startswith(prefix) and _admits(tree, path[len(prefix):]):
                    return f"a directory whose files it writes holds {g.role} ({g.path})"
        if not os.path.isdir(resolved):
            return None
        parts = [p for p in resolved.split("/") if p]
        for pattern in self.patterns:
            held = _holds(resolved, parts, pattern)
            if held is not None and _admits(tree, posixpath.relpath(held, resolved)):
                return f"a directory whose files it writes holds {held}, " + _harness(pattern)
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
                return f"a directory that holds {held}, " + _harness(pattern)
        return None


@lru_cache(maxsize=16)
def _matcher(patterns: tuple[str, ...], guarded: tuple[Guarded, ...]) -> _Matcher:
    return _Matcher(patterns, guarded)


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


def _harness(pattern: str) -> str:
    owner = _HARNESS_OF.get(pattern)
    if owner is None:
        return f"a protected path ({pattern}, [policy] protected)"
    return f"a setting of an agent harness ({owner}: {pattern}): it decides what the agent " \
           "may run without asking"


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


def _into(analysis: ShellAnalysis, commands: Iterable[int], given: str) -> list[str] | None:
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


def _may_write(analysis: ShellAnalysis) -> list[str]:
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
        kinds = {p.kind.value for p in inv.parts}
        if kinds & {"exec", "unknown"}:
            blind.add(index)
        for part in inv.parts:
            if part.value is None and part.kind.value == "unknown" and part.literal \
                    and part.option is None:  # git frobnicate signoff.toml
                out.append(part.word)
            elif part.value is not None and part.literal and part.option is None and (
                    (inv.model == "sqlite3" and part.declared)
                    or command.basename == "ln"):
                out.append(part.value)
        if command.basename == "cp" and _links(command.argv):  # cp -l: a hard link too
            out.extend(p.value for p in inv.parts if p.value is not None and p.option is None
                       and p.kind.value == "read" and p.literal)
        if command.basename == "ln" and not any(p.kind.value == "write" for p in inv.parts):
            out.extend(posixpath.basename(p.value) for p in inv.parts  # ln -s x: ./x
                       if p.value is not None and p.option is None)
    for ref in analysis.paths:
        if not ref.write and ref.literal and ref.command in blind:
            out.append(ref.path)
    return list(dict.fromkeys(out))


def _find_writes(analysis: ShellAnalysis) -> dict[int, Listing]:
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


def _admits(tree: Tree, relative: str) -> bool:
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


def _worktree_deletes(analysis: ShellAnalysis) -> list[str]:
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
