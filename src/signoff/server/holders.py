"""Who holds a TCP port: so "port 8765 is already in use" can say by which process.

Linux only, best effort: the listening socket's inode from ``/proc/net/tcp`` and
``tcp6``, then the process whose ``/proc/PID/fd`` links to it. Anything unreadable (no
``/proc``, another user's process) means "not found", never an error: the caller's
message just says less.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's "st" column
COMMAND_MAX = 80  # characters of the holder's command line shown


def port_holder(port: int, *, proc: Path = PROC) -> str | None:
    """``"pid 1234 python3 signoff serve"`` for the process listening on ``port``, or
    ``None`` when it cannot be found."""
    try:
        inodes = _listening_inodes(port, proc)
        if not inodes:
            return None
        for pid in _pids(proc):
            if _holds(proc / pid, inodes):
                command = _command(proc / pid)
                return f"pid {pid} {command}" if command else f"pid {pid}"
    except OSError:
        return None
    return None


def _listening_inodes(port: int, proc: Path) -> set[str]:
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text("ascii", "replace").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != LISTEN:
                continue
            _, _, hex_port = fields[1].rpartition(":")
            if hex_port and int(hex_port, 16) == port:
                inodes.add(fields[9])
    inodes.discard("0")
    return inodes


def _pids(proc: Path) -> list[str]:
    return sorted((entry for entry in os.listdir(proc) if entry.isdigit()), key=int)


def _holds(process: Path, inodes: set[str]) -> bool:
    wanted = {f"socket:[{inode}]" for inode in inodes}
    try:
        fds = os.listdir(process / "fd")
    except OSError:  # another user's process, or gone
        return False
    for fd in fds:
        try:
            if os.readlink(process / "fd" / fd) in wanted:
                return True
        except OSError:
            continue
    return False


def _command(process: Path) -> str:
    """The command line, its program shown by name (``python3 signoff serve``, not the
    full paths), cut at ``COMMAND_MAX`` characters."""
    try:
        raw = (process / "cmdline").read_bytes()
    except OSError:
        return ""
    parts = [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]
    if not parts:
        return ""
    shown = [os.path.basename(part) if n < 2 and "/" in part else part
             for n, part in enumerate(parts)]
    text = " ".join(shown)
    printable = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return printable if len(printable) <= COMMAND_MAX else printable[:COMMAND_MAX - 1] + "…"
