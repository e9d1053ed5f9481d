"""The credentials a recursive read would find under a directory of the workspace.

``grep -r TOKEN .`` prints the lines of ``.env`` as surely as ``grep TOKEN .env``.
The directory is walked as the tool would walk it — breadth first, so the files
at the top (where a ``.env`` lives) come before the depths of ``node_modules`` —
and the first file that is a secret, or a link to one, is the answer. The walk
is bounded: past ``MAX_ENTRIES`` it stops and claims nothing, a limit the docs
name.
"""

from __future__ import annotations

import os
from collections import deque

from signoff.policy.sensitive import is_secret

MAX_ENTRIES = 20_000


def secret_under(root: str, secrets: tuple[str, ...], *, hidden: bool,
                 follow: bool = False) -> tuple[str, str] | None:
    """The first secret under ``root`` (its path relative to ``root``, and the pattern it
    matched), or ``None``. ``hidden``: whether the tool reads dot-files (grep -r does;
    rg, without ``--hidden``, does not). Links to files count by where they lead;
    linked directories are entered only with ``follow`` (grep -R, rg -L), each once."""
    if not secrets:
        return None
    queue = deque([root])
    entered = {os.path.realpath(root)}
    seen = 0
    while queue:
        directory = queue.popleft()
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        for entry in listed:
            seen += 1
            if seen > MAX_ENTRIES:
                return None
            if not hidden and entry.name.startswith("."):
                continue
            try:
                link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=follow)
            except OSError:
                continue
            if is_dir:
                real = os.path.realpath(entry.path) if link else entry.path
                if real not in entered:
                    entered.add(real)
                    queue.append(entry.path)
                continue
            hit = is_secret(entry.path, secrets) or (
                is_secret(os.path.realpath(entry.path), secrets) if link else None)
            if hit is not None:
                return os.path.relpath(entry.path, root), hit
    return None
