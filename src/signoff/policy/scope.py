"""Step 4: every path a call touches, judged against the workspace.

Paths come from three places: the tool's declared path arguments (real, or
virtual under the workspace root: ``[tools.X] virtual = true``, judged in both
readings when the real one reaches a file outside the root), its
declared working-directory argument, and — for shell tools — redirection
targets, path-like words and ``cd`` targets found by ``shell.analyze``. A
relative shell path is judged against every directory a preceding ``cd``
could have left the shell in (a ``cd`` inside a subshell may or may not
persist, so each candidate counts and the worst wins). A word the analysis
cannot place (an expansion, or a path after ``cd $X``) counts as outside.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import glob
import itertools
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from signoff.errors import PathError
from signoff.policy.spec import ToolSpec, WorkspaceConfig
from signoff.policy.workspace import Location, PathVerdict, Workspace
from signoff.shell.globoverlap import has_glob

if TYPE_CHECKING:
    from signoff.shell import ShellAnalysis
    from signoff.shell.commands import Tree
    from signoff.shell.paths import PathRef

# Device files a redirection may name without touching anyone's data.
DEVICE_SINKS = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin",
                          "/dev/tty", "/dev/random", "/dev/urandom"})
_MAX_CWDS = 8
MAX_PATHS_PER_ARGUMENT = 1024  # past this, one unknown path stands for the rest (asks)
_MAX_GLOB_PARTS = 3
_MAX_GLOB_MATCHES = 256


@dataclass(slots=True)
class ScopeResult:
    resolved: dict[str, list[str]] = field(default_factory=dict)  # arg name → resolved paths
    outside: list[PathVerdict] = field(default_factory=list)
    invalid: list[PathVerdict] = field(default_factory=list)
    allowlisted: list[PathVerdict] = field(default_factory=list)
    written: list[PathVerdict] = field(default_factory=list)  # every path a write touches
    read: list[PathVerdict] = field(default_factory=list)  # every path a shell read touches
    # Shell glob words judged as written, not expanded (their fixed prefix lies outside the
    # workspace, or they match too much): they may name any file their pattern can.
    unexpanded: list[str] = field(default_factory=list)
    # Directories a shell command reads file by file (grep -r, rg), with which files: what
    # they hold is read too.
    trees: list[tuple[PathVerdict, Tree]] = field(default_factory=list)
    root: str | None = None  # the workspace root, where a virtual tool's omitted path lands
    _outside_given: set[str] = field(default_factory=set)

    @property
    def outside_writes(self) -> list[PathVerdict]:
        return [v for v in self.written if v.location is Location.OUTSIDE and v.code is None]

    def add(self, verdict: PathVerdict) -> None:
        if verdict.code is not None:
            self.invalid.append(verdict)
        elif verdict.location is Location.ALLOWLISTED:
            self.allowlisted.append(verdict)
        elif not verdict.inside and verdict.given not in self._outside_given:
            self._outside_given.add(verdict.given)
            self.outside.append(verdict)



def judge_scope(
    workspace: Workspace | None,
    config: WorkspaceConfig | None,
    spec: ToolSpec | None,
    args: Mapping[str, Any],
    analysis: ShellAnalysis | None,
) -> ScopeResult:
    result = ScopeResult()
    if workspace is None or config is None or spec is None:
        return result
    result.root = workspace.root
    base: str | None = None
    if spec.cwd is not None and spec.cwd in args:
        verdict = workspace.check(args[spec.cwd])
        result.add(verdict)
        base = verdict.resolved
    reals: list[PathVerdict] = []  # the real readings of virtual paths that count
    for name in spec.paths:
        value = args.get(name)
        if name not in args or (value is None and spec.virtual):
            continue  # a virtual tool's omitted (null) path is its backend's root
        items = value if isinstance(value, list) else [value]
        if len(items) > MAX_PATHS_PER_ARGUMENT:
            result.add(_unplaceable(f"<{len(items)} paths in {name!r}>",
                                    f"are more than {MAX_PATHS_PER_ARGUMENT} paths to judge",
                                    workspace))
            items = items[:MAX_PATHS_PER_ARGUMENT]
        for item in items:
            verdict = _virtual(workspace, item) if spec.virtual else workspace.check(item, cwd=base)
            result.add(verdict)
            if spec.writes:
                result.written.append(verdict)
            if verdict.resolved is not None:
                result.resolved.setdefault(name, []).append(verdict.resolved)
            real = _real_reading(workspace, item, writes=spec.writes) if spec.virtual else None
            if real is not None and real.resolved is not None:
                result.add(real)
                reals.append(real)
                result.resolved.setdefault(name, []).append(real.resolved)
    if analysis is not None:
        cwd_cache: dict[tuple[str | None, ...], list[str | None] | None] = {}
        for ref in analysis.paths:
            _judge_ref(workspace, ref, base, cwd_cache, result)
    # After the shell's: the declared paths' own verdicts come first in ``written``.
    if spec.writes:
        result.written.extend(reals)
    return result


def _virtual(workspace: Workspace, path: object) -> PathVerdict:
    """A virtual path (``/notes.md`` = the root's ``notes.md``), judged where it lands
    through the same symlink-safe resolution; the verdict keeps the path as given.
    ``..`` that climbs above the root lands outside, as it would on disk; ``~`` has no
    meaning under a virtual root (deepagents refuses it) and is judged as a home path."""
    if not isinstance(path, str) or path.startswith("~"):
        return workspace.check(path)
    verdict = workspace.check(path.lstrip("/") or ".", cwd=workspace.root)
    return dataclasses.replace(verdict, given=path)


def _real_reading(workspace: Workspace, path: object, *, writes: bool) -> PathVerdict | None:
    """The other reading of a virtual path: the real one, as a backend with
    ``virtual_mode=False`` opens it. deepagents' file tools put a ``/`` before a relative
    path, so ``etc/passwd`` is ``/etc/passwd`` there too. Judged beside the virtual
    reading (the stricter wins), it counts only when it reaches something outside the
    workspace: the path exists there, or — for a write — the directory it would be
    created in (the nearest that exists: a backend creates the missing ones) is not
    ``/`` and may be written. ``/notes.md`` and ``/src/app.py``, read or written, and
    ``/`` itself are left to the virtual reading: a real ``/notes.md`` does not exist,
    and every virtual listing starts at ``/``. A path the real reading cannot place (a
    loop) cannot be opened there either: the virtual reading judges it."""
    if not isinstance(path, str) or path.startswith("~") or "\x00" in path:
        return None
    real = "/" + path.lstrip("/")
    if posixpath.normpath(real) == "/" or (not writes and not os.path.lexists(real)):
        return None
    verdict = workspace.check(real)
    if verdict.code is not None or verdict.inside or verdict.resolved is None:
        return None
    if not os.path.lexists(real) and not _creatable(verdict.resolved):
        return None
    return dataclasses.replace(verdict, given=path, note=(
        f"read as a real path (by a backend with virtual_mode=False): {verdict.note}"))


def _creatable(resolved: str) -> bool:
    """A write to ``resolved`` (which does not exist) would create it: the nearest
    directory above it that exists is not ``/`` and this process may write in it."""
    head = posixpath.dirname(resolved)
    while head != "/" and not os.path.isdir(head):
        head = posixpath.dirname(head)
    return head != "/" and os.access(head, os.W_OK)


def _judge_ref(workspace: Workspace, ref: PathRef, base: str | None,
               cache: dict[tuple[str | None, ...], list[str | None] | None],
               result: ScopeResult) -> None:
    if ref.literal and ref.path in DEVICE_SINKS:
        return
    # what a read touches, for secret_read; ls and stat only look (a list no one reads)
    touched = result.written if ref.write else [] if ref.stat else result.read

    def add(verdict: PathVerdict) -> None:
        result.add(verdict)
        touched.append(verdict)
        if ref.tree is not None:
            result.trees.append((verdict, ref.tree))

    if not ref.literal:  # <…>: names the command reads when it runs (xargs, tar -T)
        add(_unplaceable(ref.path, "is read when the command runs" if ref.path.startswith("<")
                         else "is an expansion whose value cannot be known before it runs",
                         workspace))
        return
    if ref.cds not in cache:
        cache[ref.cds] = _candidate_cwds(workspace, ref.cds, base)
    cwds = cache[ref.cds]
    absolute = ref.path.startswith(("/", "~"))
    if cwds is None and not absolute:
        add(_unplaceable(ref.path, "follows a cd whose target cannot be known", workspace))
        return
    for cwd in cwds or [base]:
        if not has_glob(ref.path):
            add(workspace.check(ref.path, cwd=cwd))
            continue
        if ref.path.startswith("~") or \
                not workspace.check(_fixed_prefix(ref.path), cwd=cwd).inside:
            if not ref.stat:
                result.unexpanded.append(ref.path)  # outside already: judged as written
            add(workspace.check(ref.path, cwd=cwd))
            continue
        expanded = _expand_glob(workspace, ref.path, cwd)
        if expanded is None:
            if not ref.stat:
                result.unexpanded.append(ref.path)
            add(_unplaceable(ref.path, "is a glob too wide to judge", workspace))
            continue
        for match in expanded:
            add(workspace.check(match, cwd=cwd))


def _expand_glob(workspace: Workspace, pattern: str, cwd: str | None) -> list[str] | None:
    """What the shell would pass for a glob word, judged file by file (``cat *`` reads
    through a symlink the workspace holds). ``None`` when it is too wide to enumerate.

    The caller expands only globs whose fixed prefix lies inside the workspace: a
    prefix outside is outside already. A component that matches ``..`` (``.*`` in dash and
    bash before 5.2) also stands for ``..``. No match: the shell passes the word as is.
    """
    parts = pattern.split("/")
    if sum(1 for part in parts if has_glob(part)) > _MAX_GLOB_PARTS:
        return None
    start = workspace.resolve(cwd) if cwd is not None else workspace.root
    full = pattern if pattern.startswith("/") else os.path.join(start, pattern)
    matches = list(itertools.islice(glob.iglob(full), _MAX_GLOB_MATCHES + 1))
    if len(matches) > _MAX_GLOB_MATCHES:
        return None
    # bash matches a leading dot only with a literal one: ``*`` never stands for ``..``
    dotdot = "/".join(".." if has_glob(p) and p.startswith(".") and fnmatch.fnmatchcase("..", p)
                      else p for p in parts)
    if dotdot != pattern:
        matches.append(dotdot)
    return matches or [pattern]


def _fixed_prefix(pattern: str) -> str:
    """The directories a glob word names before its first wildcard (``.`` for none)."""
    fixed = "/".join(itertools.takewhile(lambda part: not has_glob(part), pattern.split("/")))
    return fixed or ("/" if pattern.startswith("/") else ".")


def _candidate_cwds(workspace: Workspace, cds: tuple[str | None, ...],
                    base: str | None) -> list[str | None] | None:
    cwds: list[str | None] = [base]
    for target in cds:
        if target is None:
            return None
        moved: list[str | None] = []
        for cwd in cwds:
            try:
                moved.append(workspace.resolve(target, cwd=cwd))
            except PathError:
                return None
        cwds = list(dict.fromkeys([*cwds, *moved]))
        if len(cwds) > _MAX_CWDS:
            return None
    return cwds


def _unplaceable(given: str, why: str, workspace: Workspace) -> PathVerdict:
    return PathVerdict(given=given, resolved=None, location=Location.OUTSIDE,
                       note=f"{given!r} {why}; treated as outside workspace {workspace.name!r}")
