"""Who may change or read a path, from its POSIX modes: what ``signoff doctor`` asks of the
files the gate depends on.

Writing a file is one way to change it; there are others. An account that owns a file can
``chmod`` it; one that may write any directory on the way to it can rename that directory
and put another tree in its place; a missing file is created by whoever may write its
directory. All of these need the account to reach the place (search permission on every
directory above it). A sticky directory (``/tmp``) lets an account rename only the entries
it owns. The path is judged both as written and with its symlinks resolved.

Modes only: access control lists, capabilities and mount options are not read, so an
answer of "cannot" is as good as the modes are (root, uid 0, can always).
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

from signoff.errors import ConfigurationError

_R, _W, _X = 4, 2, 1


@dataclass(frozen=True, slots=True)
class OsUser:
    """An OS user as the kernel sees it: a uid and every group it is in."""

    name: str
    uid: int
    gids: frozenset[int]

    @classmethod
    def named(cls, name: str) -> OsUser:
        """The user called ``name`` (or with that numeric uid), with its groups."""
        try:
            entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
        except (KeyError, OverflowError):
            raise ConfigurationError(f"--agent-user {name}: no such user on this machine",
                                     code="unknown_user") from None
        return cls(entry.pw_name, entry.pw_uid,
                   frozenset(os.getgrouplist(entry.pw_name, entry.pw_gid)))

    @classmethod
    def current(cls) -> OsUser:
        """The user this process runs as (its effective uid and groups)."""
        uid = os.geteuid()
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = str(uid)
        return cls(name, uid, frozenset({os.getegid(), *os.getgroups()}))


# Not a user: the "other" class of every mode, i.e. whoever is neither owner nor in the group.
ANYONE = OsUser("any user", -1, frozenset())


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _allows(account: OsUser, st: os.stat_result, want: int) -> bool:
    if account.uid == 0:
        return True
    if st.st_uid == account.uid:
        shift = 6
    elif st.st_gid in account.gids:
        shift = 3
    else:
        shift = 0
    return (st.st_mode >> shift) & want == want


def _above(path: Path) -> list[Path]:
    """The directories above ``path``, nearest first."""
    return list(path.parents)


def reaches(account: OsUser, path: Path) -> bool:
    """Whether ``account`` may search every directory above ``path``."""
    for directory in reversed(_above(path)):
        try:
            if not _allows(account, os.stat(directory), _X):
                return False
        except OSError:
            return False
    return True


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _route(account: OsUser, path: Path) -> str | None:
    found = _lstat(path)
    if found is not None and not stat.S_ISLNK(found.st_mode) and reaches(account, path):
        if found.st_uid == account.uid:
            return f"owns {path}"
        if _allows(account, found, _W):
            return f"may write {path}"
    child, child_stat = path, found
    for directory in _above(path):
        try:
            st = os.stat(directory)
        except OSError:
            child, child_stat = directory, None
            continue
        if reaches(account, directory):
            if st.st_uid == account.uid:
                return f"owns the directory {directory}"
            if _allows(account, st, _W | _X):
                sticky = bool(st.st_mode & stat.S_ISVTX)
                # a sticky directory: only one's own entries (or a missing one, by creating it)
                if not sticky or child_stat is None or child_stat.st_uid == account.uid:
                    verb = "create" if child_stat is None else "replace"
                    return f"may write the directory {directory} (and {verb} {child.name})"
        child, child_stat = directory, _lstat(directory)
    return None


def _forms(path: str | Path) -> list[Path]:
    written = Path(os.path.abspath(path))
    resolved = Path(os.path.realpath(path))
    return [written] if written == resolved else [written, resolved]


def how_changed(account: OsUser, path: str | Path) -> str | None:
    """How ``account`` could change what ``path`` holds (write, own, replace or create
    it), in a few words; ``None`` if the modes allow none of these."""
    for form in _forms(path):
        route = _route(account, form)
        if route is not None:
            return route
    return None


def may_read(account: OsUser, path: str | Path) -> bool:
    """Whether ``account`` may read the existing file ``path``."""
    resolved = Path(os.path.realpath(path))
    try:
        st = os.stat(resolved)
    except OSError:
        return False
    return reaches(account, resolved) and _allows(account, st, _R)
