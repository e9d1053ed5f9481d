"""Judge whether a path an agent names lies inside the workspace root.

The verdict must match what the kernel would do when a tool opens the path, so
the path is resolved the way the kernel resolves it: component by component,
following every symlink with ``os.lstat``/``os.readlink``, and applying ``..``
to the *resolved* parent (``link/..`` is the parent of the link's target, not
the directory holding the link). ``os.path.normpath`` on the raw string would
get that wrong, and ``os.path.realpath`` neither reports loops nor knows about
``/proc``.

Rules worth knowing (see ``docs/workspace.md``):

* relative paths resolve against ``cwd`` (default: the root); ``~`` expands
  like the shell, and a ``~`` path is judged both expanded and literally, the
  worse verdict winning, because we cannot know whether the tool expands it;
* a dangling symlink is followed to where a write would create the file; the
  non-existent rest is joined lexically;
* more than 40 symlink follows is a loop (``symlink_loop``) and is denied;
* any walk that touches ``/proc``, ``/dev/fd`` or ``/dev/std{in,out,err}`` is
  OUTSIDE: those magic links describe *some process's* view of the filesystem
  (``/proc/self/root`` of the checker is not the tool's), so no answer read
  through them can be trusted to be inside;
* a component we may not ``lstat`` (EACCES) is taken as a plain directory, and
  anything under a missing or non-directory component is joined lexically.

This is a check, not a lock: a symlink can be swapped in after the check.
Tools that open files should use :mod:`signoff.safeopen`.
"""

from __future__ import annotations

import enum
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from stat import S_ISLNK

from signoff.errors import PathError

__all__ = ["Location", "PathVerdict", "Workspace"]

MAX_SYMLINK_FOLLOWS = 40  # Linux's MAXSYMLINKS: the kernel gives up (ELOOP) after as many
PATH_MAX = 4096  # bytes; longer paths fail with ENAMETOOLONG in the kernel anyway

_MAGIC = frozenset({"/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"})
_NOTE_MAX = 160  # characters of a path quoted in a note; keeps notes one short line


class Location(enum.StrEnum):
    """Where a resolved path lies. ALLOWLISTED is outside but admitted by the operator."""

    INSIDE = "inside"
    ALLOWLISTED = "allowlisted"
    OUTSIDE = "outside"


@dataclass(frozen=True, slots=True, kw_only=True)
class PathVerdict:
    """The judgement of one path.

    ``code`` is set only for paths that are not valid paths at all; those must be
    denied whatever the workspace setting (an ``allow_all`` workspace included).
    """

    given: str
    resolved: str | None
    location: Location
    note: str
    code: str | None = None

    @property
    def inside(self) -> bool:
        """True for INSIDE and ALLOWLISTED: the path needs no scope approval."""
        return self.location is not Location.OUTSIDE


def _q(path: str) -> str:
    """Quote a path for a note: repr() escapes control characters, long paths are cut."""
    text = repr(path)
    return text if len(text) <= _NOTE_MAX else text[: _NOTE_MAX - 4] + "...'"


def _validate(path: object, what: str = "path") -> str:
    """Return ``path`` if it is a usable path string, else raise PathError with its code."""
    if not isinstance(path, str):
        raise PathError(f"{what} must be a string, not {type(path).__name__}", code="invalid_path")
    if not path:
        raise PathError(f"{what} is empty", code="empty_path")
    if "\x00" in path:
        raise PathError(f"{what} {_q(path)} contains a NUL byte", code="nul_byte")
    try:
        size = len(path.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        raise PathError(f"{what} {_q(path)} is not encodable", code="invalid_path") from None
    if size > PATH_MAX:
        raise PathError(f"{what} is {size} bytes, over {PATH_MAX}", code="path_too_long")
    return path


class Workspace:
    """A resolved root, a display name and an allowlist; immutable, so safe to share.

    ``root`` and the allowlist are resolved once here with ``os.path.realpath``
    (after ``~`` expansion; relative allowlist entries are relative to the root).
    An allowlist entry admits that exact path and, when it is a directory or is
    written with a trailing ``/``, everything beneath it.
    """

    __slots__ = (
        "_allow_dirs",
        "_allow_exact",
        "_magic",
        "_prefix",
        "_root_slash",
        "allowlist",
        "name",
        "root",
    )

    def __init__(
        self, root: str, *, name: str = "workspace", allowlist: Sequence[str] = ()
    ) -> None:
        _validate(root, "workspace root")
        self.root: str = os.path.realpath(os.path.expanduser(root))
        self.name: str = name
        self._root_slash = self.root if self.root == "/" else self.root + "/"
        # The root and its existing ancestors were just resolved: real directories, so the
        # walk need not lstat them again. A root that does not exist yet is not trusted.
        prefix: set[str] = set()
        head = self.root
        while True:
            if os.path.isdir(head):
                prefix.add(head)
            if head == "/":
                break
            head = posixpath.dirname(head)
        self._prefix = frozenset(prefix)
        # If the operator really put the root under /proc, the magic rule would deny everything.
        under_magic = any(self.root == m or self.root.startswith(m + "/") for m in _MAGIC)
        self._magic = frozenset() if under_magic else _MAGIC
        exact: list[str] = []
        dirs: list[str] = []
        for entry in allowlist:
            _validate(entry, "allowlist entry")
            full = os.path.realpath(os.path.join(self.root, os.path.expanduser(entry)))
            exact.append(full)
            if entry.endswith("/") or os.path.isdir(full):
                dirs.append(full if full == "/" else full + "/")
        self.allowlist: tuple[str, ...] = tuple(exact)
        self._allow_exact = frozenset(exact)
        self._allow_dirs = tuple(dirs)

    def __repr__(self) -> str:
        return f"Workspace(root={self.root!r}, name={self.name!r}, allowlist={self.allowlist!r})"

    # -- public -----------------------------------------------------------------------

    def resolve(self, path: str, *, cwd: str | None = None) -> str:
        """The absolute, fully resolved path, as the kernel would reach it.

        Raises PathError (``invalid_path``, ``nul_byte``, ``empty_path``,
        ``path_too_long``, ``symlink_loop``). Paths through magic links come back
        lexically joined; only :meth:`check` judges them.
        """
        _validate(path)
        return self._resolve(os.path.expanduser(path), cwd)[0]

    def check(self, path: object, *, cwd: str | None = None) -> PathVerdict:
        """Judge ``path``; never raises for bad input (the verdict carries a ``code``).

        ``cwd`` is trusted (it comes from the caller, never from the model): an
        absolute directory, or one relative to the root. It may itself lie outside
        (after a shell ``cd /etc``); only the result is judged.
        """
        given = path if isinstance(path, str) else repr(path)
        try:
            text = _validate(path)
            expanded = os.path.expanduser(text) if text.startswith("~") else text
            resolved, magic = self._resolve(expanded, cwd)
            if expanded != text:
                # "~/x" opened by a tool that does not expand "~" is "<cwd>/~/x": judge both.
                literal, literal_magic = self._resolve(text, cwd)
                if (
                    not magic
                    and self._locate(resolved) is not Location.OUTSIDE
                    and (literal_magic or self._locate(literal) is Location.OUTSIDE)
                ):
                    resolved, magic = literal, literal_magic
        except PathError as exc:
            return PathVerdict(
                given=given,
                resolved=None,
                location=Location.OUTSIDE,
                note=exc.message,
                code=exc.code,
            )
        where = f"workspace {self.name!r} ({self.root})"
        if magic:
            return PathVerdict(
                given=given,
                resolved=resolved,
                location=Location.OUTSIDE,
                note=f"{_q(given)} goes through /proc or /dev/fd, whose links show some "
                f"process's view of the filesystem; treated as outside {where}",
            )
        location = self._locate(resolved)
        if location is Location.INSIDE:
            note = f"{_q(given)} resolves to {_q(resolved)}, inside workspace {self.name!r}"
        elif location is Location.ALLOWLISTED:
            note = f"{_q(given)} resolves to {_q(resolved)}, outside {where} but allowlisted"
        else:
            note = f"{_q(given)} resolves to {_q(resolved)}, outside {where}"
        return PathVerdict(given=given, resolved=resolved, location=location, note=note)

    # -- internals --------------------------------------------------------------------

    def _locate(self, resolved: str) -> Location:
        if resolved == self.root or resolved.startswith(self._root_slash):
            return Location.INSIDE
        if resolved in self._allow_exact or resolved.startswith(self._allow_dirs):
            return Location.ALLOWLISTED
        return Location.OUTSIDE

    def _resolve(self, path: str, cwd: str | None) -> tuple[str, bool]:
        """(resolved, went_through_magic) for an already validated, ``~``-expanded path."""
        if path.startswith("/"):
            return self._walk(path, "/")
        if cwd is None:
            return self._walk(path, self.root)
        base, magic = self._walk(_validate(cwd, "cwd"), self.root)
        if magic:
            return posixpath.normpath(posixpath.join(base, path)), True
        return self._walk(path, base)

    def _walk(self, path: str, base: str) -> tuple[str, bool]:
        """Resolve ``path`` from the resolved directory ``base`` as the kernel would.

        An explicit stack of pending components (link targets are pushed onto it)
        keeps this iterative: no recursion, and at most 40 follows, so it never
        hangs and never hits RecursionError.
        """
        magic = self._magic
        prefix = self._prefix
        lstat = os.lstat
        readlink = os.readlink
        resolved = "/" if path.startswith("/") else base
        pending = path.split("/")
        pending.reverse()
        follows = 0
        while pending:
            name = pending.pop()
            if not name or name == ".":
                continue
            if name == "..":
                resolved = resolved.rpartition("/")[0] or "/"
                continue
            new = "/" + name if resolved == "/" else resolved + "/" + name
            if new in prefix:  # the root's own chain, resolved at construction
                resolved = new
                continue
            if new in magic:
                pending.reverse()
                return posixpath.normpath("/".join([new, *pending])), True
            try:
                if not S_ISLNK(lstat(new).st_mode):
                    resolved = new
                    continue
                target = readlink(new)
            except OSError:
                # ENOENT (a file to be created), ENOTDIR (a file used as a directory),
                # EACCES (cannot look): judge the rest lexically, as the string says.
                resolved = new
                continue
            follows += 1
            if follows > MAX_SYMLINK_FOLLOWS:
                raise PathError(
                    f"too many levels of symbolic links at {_q(new)} (more than "
                    f"{MAX_SYMLINK_FOLLOWS} follows)",
                    code="symlink_loop",
                )
            if target.startswith("/"):
                resolved = "/"
            parts = target.split("/")
            parts.reverse()
            pending.extend(parts)
        return resolved, False
