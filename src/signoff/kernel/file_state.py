"""A file as it is now, read the safe way, and the version a request binds it by.

Read beneath the workspace root (or its allowlist entry) through
:mod:`signoff.safeopen`, without following a symlink out; nothing but a regular file is
opened for reading (no FIFO can block, no device is touched). The version —
``sha256:…``, ``absent``, ``large:…`` or ``unreadable:…`` — is recorded at proposal
(``signoff.kernel.write_evidence``) and read again before the approved call runs
(``file_versions_now``): a file changed since refuses the claim (``resource_changed``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import posixpath
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from signoff.errors import PathError
from signoff.policy import Policy
from signoff.policy.workspace import Location, PathVerdict, Workspace
from signoff.safeopen import open_beneath

__all__ = ["HASH_MAX", "PREFIX", "READ_MAX", "FileState", "base_for", "file_state",
           "file_versions_now"]

READ_MAX = 1 << 20  # bytes of a file (and of new content) read to show a diff
HASH_MAX = 64 << 20  # bytes hashed for a version; a larger file is versioned by its metadata
PREFIX = "file:"  # resource-version keys of files: "file:<resolved path>"


@dataclass(frozen=True, slots=True)
class FileState:
    """A file as read now: ``version`` is what the request binds to."""

    version: str  # "absent" | "sha256:<hex>" | "large:<size>:<mtime_ns>:<ino>" | "unreadable:<why>"
    size: int | None = None
    sha256: str | None = None
    data: bytes | None = None  # the content, when at most READ_MAX bytes were asked for
    note: str | None = None  # why it is unreadable

    @property
    def absent(self) -> bool:
        return self.version == "absent"

    @property
    def readable(self) -> bool:
        return not self.version.startswith("unreadable:")


def base_for(workspace: Workspace, verdict: PathVerdict) -> str | None:
    """The directory a path must be opened beneath: the root, or its allowlist entry."""
    if verdict.resolved is None or verdict.code is not None:
        return None
    if verdict.location is Location.INSIDE:
        return workspace.root
    if verdict.location is Location.ALLOWLISTED:
        for entry in workspace.allowlist:
            if verdict.resolved == entry:
                return posixpath.dirname(entry) or "/"
            if verdict.resolved.startswith(entry.rstrip("/") + "/"):
                return entry
    return None


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink"))


def _what(mode: int) -> str:
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


def file_state(base: str, resolved: str, *, want_data: bool = True) -> FileState:
    """Read ``resolved`` beneath ``base`` without following a symlink out, without opening
    anything but a regular file for reading (no FIFO can block, no device is touched)."""
    try:
        handle = open_beneath(base, resolved, os.O_PATH)
    except FileNotFoundError:
        return FileState("absent")
    except PathError as exc:
        return FileState("unreadable:escape", note=f"not read: {exc.message}")
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return FileState("absent")
        return FileState(f"unreadable:{errno.errorcode.get(exc.errno or 0, 'error')}",
                         note=f"cannot be opened: {exc.strerror}")
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            what = _what(info.st_mode)
            return FileState(f"unreadable:{what.split()[-1]}", note=f"is {what}; not read")
        try:  # reopen the very file the O_PATH handle holds, now for reading
            fd = os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            fd = open_beneath(base, resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        return FileState("unreadable:error", note=f"cannot be read: {exc.strerror}")
    finally:
        os.close(handle)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (
                info.st_dev, info.st_ino):
            return FileState("unreadable:moved", note="changed while it was read; not read")
        if opened.st_size > HASH_MAX:
            return FileState(f"large:{opened.st_size}:{opened.st_mtime_ns}:{opened.st_ino}",
                             size=opened.st_size)
        digest = hashlib.sha256()
        kept: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
            if want_data and size <= READ_MAX:
                kept.append(chunk)
            size += len(chunk)
            if size > HASH_MAX:
                return FileState(f"large:{size}:{opened.st_mtime_ns}:{opened.st_ino}",
                                 size=size)
    except OSError as exc:
        return FileState("unreadable:error", note=f"cannot be read: {exc.strerror}")
    finally:
        os.close(fd)
    sha = digest.hexdigest()
    data = b"".join(kept) if want_data and size <= READ_MAX else None
    return FileState(f"sha256:{sha}", size=size, sha256=sha, data=data)


def file_versions_now(policy: Policy, recorded: Mapping[str, str]) -> dict[str, str]:
    """The current versions of the files a request is bound to (its ``file:`` keys), read
    the way they were read at proposal. A path that no longer resolves to itself inside the
    workspace (a directory swapped for a symlink, the workspace changed) reads as moved."""
    out: dict[str, str] = {}
    workspace = policy.workspace
    for key in recorded:
        if not key.startswith(PREFIX):
            continue
        path = key[len(PREFIX):]
        if workspace is None:
            out[key] = "unreadable:no-workspace"
            continue
        verdict = workspace.check(path)
        base = base_for(workspace, verdict)
        if base is None or verdict.resolved != path:
            out[key] = "unreadable:moved"
            continue
        out[key] = file_state(base, path, want_data=False).version
    return out
