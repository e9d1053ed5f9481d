"""Open a file beneath a root without following a symlink swapped in after the check.

:class:`signoff.policy.workspace.Workspace` judges a path *before* the tool
runs; between that check and the tool's ``open()`` an agent (or anything it
started) can replace a directory with a symlink to ``/``. Tools close that
window by opening through this module, which makes the kernel refuse to leave
the root while it resolves the path.

Two methods, chosen by ``method=``:

``openat2`` (preferred; Linux >= 5.6)
    ``openat2(2)`` with ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS``. Symlinks
    are followed *as long as they stay beneath the root*; absolute symlinks,
    ``..`` above the root and ``/proc`` magic links are refused by the kernel,
    atomically with the lookup.

``walk`` (fallback when openat2 is missing, ENOSYS, or blocked by seccomp, EPERM)
    One ``openat`` per component with ``O_PATH | O_NOFOLLOW``, each relative to
    the previous directory's fd; the fd is ``fstat``-ed so that a symlink is
    caught on the very object that was opened, not by a later, racy ``lstat``.
    ``..`` is applied lexically to the stack of fds (never by asking the kernel
    for a parent, which a concurrent rename could move outside). **Every**
    symlink is refused, even one that points inside the root: stricter than
    openat2.

``auto`` (default) uses openat2 when :func:`has_openat2` says it works.

Absolute paths are accepted only when they lie lexically beneath the root's
path (as given, or its realpath); they are then opened relative to the root.

Refusals raise ``PathError(code="path_escape")``; ordinary failures (ENOENT,
EACCES, ENOTDIR, ...) propagate as ``OSError``.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from typing import TYPE_CHECKING, Any, Literal

from signoff.errors import PathError

if TYPE_CHECKING:
    import ctypes

__all__ = ["Method", "has_openat2", "open_beneath", "read_beneath"]

Method = Literal["auto", "openat2", "walk"]

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08
_EAGAIN_RETRIES = 16  # openat2 says EAGAIN when a concurrent rename makes '..' unsafe
_DIR_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
_AT_FDCWD = -100


# ``ctypes`` and ``platform`` are imported when a file is first opened beneath a root:
# a process that opens none (a coding agent's hook judging a Read) never loads them.
@functools.cache
def _syscall_number() -> int | None:
    import platform  # noqa: PLC0415

    return {"x86_64": 437, "amd64": 437, "aarch64": 437, "arm64": 437}.get(
        platform.machine().lower())


@functools.cache
def _open_how() -> Any:
    """``struct open_how`` from <linux/openat2.h>."""
    import ctypes  # noqa: PLC0415

    class _OpenHow(ctypes.Structure):
        _fields_ = (
            ("flags", ctypes.c_uint64),
            ("mode", ctypes.c_uint64),
            ("resolve", ctypes.c_uint64),
        )

    return _OpenHow


@functools.cache
def _libc() -> ctypes.CDLL:
    import ctypes  # noqa: PLC0415

    return ctypes.CDLL(None, use_errno=True)


def _raw_openat2(dirfd: int, path: bytes, flags: int, mode: int, resolve: int) -> int:
    """One openat2 call; returns the fd or raises OSError with the kernel's errno."""
    import ctypes  # noqa: PLC0415

    number = _syscall_number()
    if number is None:
        raise OSError(errno.ENOSYS, "openat2: unknown syscall number on this machine")
    how = _open_how()(flags, mode, resolve)
    fd = int(
        _libc().syscall(
            ctypes.c_long(number),
            ctypes.c_int(dirfd),
            ctypes.c_char_p(path),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


@functools.cache
def has_openat2() -> bool:
    """Whether openat2 with RESOLVE_BENEATH works here (probed once, then cached)."""
    try:
        resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
        fd = _raw_openat2(_AT_FDCWD, b".", os.O_PATH | os.O_CLOEXEC, 0, resolve)
    except (OSError, AttributeError):  # ENOSYS, EPERM (seccomp), no syscall() in libc
        return False
    os.close(fd)
    return True


def _escape(path: str, why: str) -> PathError:
    return PathError(f"refused to open {path!r}: {why}", code="path_escape")


def _root_paths(root: str | int) -> list[str]:
    """The strings an absolute path may start with to count as beneath ``root``."""
    if isinstance(root, int):
        try:
            return [os.readlink(f"/proc/self/fd/{root}")]
        except OSError:
            return []
    return [os.path.abspath(root), os.path.realpath(root)]


def _relative(root: str | int, path: str) -> str:
    """``path`` as a path relative to the root; absolute paths must lie lexically beneath it.

    Only whole leading components are stripped, never normalised: ``..`` and symlinks
    in the rest are left for the kernel (openat2) or the fd walk to handle.
    """
    if not path.startswith("/"):
        return path
    parts = [p for p in path.split("/") if p not in ("", ".")]
    for base in _root_paths(root):
        prefix = [p for p in base.split("/") if p]
        if parts[: len(prefix)] == prefix:
            rest = "/".join(parts[len(prefix) :]) or "."
            return rest + "/" if path.endswith("/") and rest != "." else rest
    raise _escape(path, "absolute path outside the root")


def _open_openat2(rootfd: int, rel: str, flags: int, mode: int) -> int:
    try:
        encoded = os.fsencode(rel)
    except UnicodeEncodeError:
        raise PathError(f"path {rel!r} is not encodable", code="invalid_path") from None
    # openat2 rejects a mode without O_CREAT/O_TMPFILE (EINVAL), unlike open().
    mode = mode if flags & os.O_CREAT or (flags & os.O_TMPFILE) == os.O_TMPFILE else 0
    for _ in range(_EAGAIN_RETRIES):
        try:
            return _raw_openat2(
                rootfd, encoded, flags | os.O_CLOEXEC, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
            )
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise _escape(rel, "it resolves outside the root") from None
            if exc.errno == errno.ELOOP:
                raise _escape(rel, "a magic link, a symlink loop or O_NOFOLLOW") from None
            if exc.errno != errno.EAGAIN:
                exc.filename = rel
                raise
    raise _escape(rel, "the tree kept changing under '..' (EAGAIN)")


def _open_walk(rootfd: int, rel: str, flags: int, mode: int) -> int:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if rel.endswith("/") and not flags & os.O_CREAT:
        flags |= os.O_DIRECTORY  # a trailing slash would make the kernel follow a final link
    last = parts.pop() if parts and parts[-1] != ".." else None
    stack: list[int] = []  # fds of the directories below the root, innermost last
    try:
        for name in parts:
            if name == "..":
                if not stack:
                    raise _escape(rel, "'..' climbs above the root")
                os.close(stack.pop())
                continue
            fd = os.open(name, _DIR_FLAGS, dir_fd=stack[-1] if stack else rootfd)
            stack.append(fd)
            mode_bits = os.fstat(fd).st_mode  # the object opened, not whatever is there now
            if stat.S_ISLNK(mode_bits):
                raise _escape(rel, f"{name!r} is a symlink (the fd walk refuses all symlinks)")
            if not stat.S_ISDIR(mode_bits):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        dirfd = stack[-1] if stack else rootfd
        if last is None:
            return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=dirfd)
        try:
            return os.open(last, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dirfd)
        except NotADirectoryError:  # O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR
            if stat.S_ISLNK(os.lstat(last, dir_fd=dirfd).st_mode):
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
            raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink as the last component
            why = f"{last!r} is a symlink (the fd walk refuses all symlinks)"
            raise _escape(rel, why) from None
        exc.filename = rel
        raise
    finally:
        for fd in stack:
            os.close(fd)


def open_beneath(
    root: str | int,
    path: str,
    flags: int = os.O_RDONLY,
    mode: int = 0o600,
    *,
    method: Method = "auto",
) -> int:
    """Open ``path`` beneath ``root`` (a directory path or an open directory fd); return an fd.

    The caller owns the fd. ``O_CLOEXEC`` is always added. Raises
    ``PathError`` (``path_escape``, ``nul_byte``, ``empty_path``, ``invalid_path``)
    when the path would leave the root; ``OSError`` for everything else.
    """
    if not isinstance(path, str):
        raise PathError(f"path must be a string, not {type(path).__name__}", code="invalid_path")
    if not path:
        raise PathError("path is empty", code="empty_path")
    if "\x00" in path:
        raise PathError(f"path {path!r} contains a NUL byte", code="nul_byte")
    if method not in ("auto", "openat2", "walk"):
        raise ValueError(f"unknown method {method!r}")
    use_openat2 = method == "openat2" or (method == "auto" and has_openat2())
    rel = _relative(root, path)
    if isinstance(root, str):
        rootfd, owned = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), True
    else:
        rootfd, owned = root, False
    try:
        if use_openat2:
            return _open_openat2(rootfd, rel, flags, mode)
        return _open_walk(rootfd, rel, flags, mode)
    finally:
        if owned:
            os.close(rootfd)


def read_beneath(root: str | int, path: str, *, method: Method = "auto") -> bytes:
    """Read a whole regular file beneath ``root``.

    Opened with ``O_NONBLOCK`` and checked to be a regular file, so a FIFO or a
    device planted in the workspace cannot make the tool hang.
    """
    fd = open_beneath(root, path, os.O_RDONLY | os.O_NONBLOCK, method=method)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
