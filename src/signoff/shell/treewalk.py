"""The credentials a recursive read would find under a directory of the workspace.

``grep -r TOKEN .`` prints the lines of ``.env`` as surely as ``grep TOKEN .env``.
The directory is walked as the tool would walk it — dot-files or not, linked
directories or not, the files its ``--include``/``-g`` globs admit — breadth first,
so the files at the top (where a ``.env`` lives) come before the depths, and the
first file that is a secret, or a link to one, is the answer. Installed packages
are not the user's credentials: ``node_modules`` and virtualenvs (a ``pyvenv.cfg``)
are not entered, and a ``.pem`` counts only when it holds a private key (certifi's
``cacert.pem`` is public). The walk is bounded: past ``MAX_ENTRIES`` for a call it
stops and claims nothing, a limit the docs name.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections import deque
from typing import TYPE_CHECKING

from signoff.globs.pathglob import is_secret
from signoff.shell.ignores import Ignores

if TYPE_CHECKING:
    from signoff.shell.commands import Tree

MAX_ENTRIES = 20_000  # for one call, however many directories it searches
_PEM_HEAD = 1 << 16
MAX_PEMS = 64  # PEM files opened for one call; past them, a .pem counts as a key
_PRIVATE = b"PRIVATE KEY"
_INSTALLS = ("node_modules",)


class Budget:
    """The entries one call's walks may still look at."""

    def __init__(self, entries: int | None = None) -> None:
        self.left = MAX_ENTRIES if entries is None else entries
        self.pems = MAX_PEMS


def secret_under(root: str, secrets: tuple[str, ...], tree: Tree, *,
                 budget: Budget | None = None) -> tuple[str, str] | None:
    """The first secret under ``root`` that ``tree`` reads (its path relative to ``root``,
    and the pattern it matched), or ``None``. Links to files count by where they lead;
    linked directories are entered only when ``tree.follow`` (grep -R, rg -L), once."""
    if not secrets:
        return None
    return _Walk(root, secrets, tree, budget or Budget()).run()


class _Walk:
    def __init__(self, root: str, secrets: tuple[str, ...], tree: Tree, budget: Budget) -> None:
        self.root, self.secrets, self.tree, self.budget = root, secrets, tree, budget
        # each directory with its path from the root, the depth of its entries and the
        # ignore rules of the directories above it
        above = Ignores.above(root, tree.ignores) if tree.ignores else None
        self.queue: deque[tuple[str, str, int, Ignores | None]] = deque([(root, "", 1, above)])
        self.entered = {os.path.realpath(root)}

    def run(self) -> tuple[str, str] | None:
        while self.queue:
            directory, prefix, depth, above = self.queue.popleft()
            try:
                with os.scandir(directory) as entries:
                    listed = sorted(entries, key=lambda e: e.name)
            except OSError:
                continue
            ignores = None if above is None else above.within(directory, prefix)
            for entry in listed:
                self.budget.left -= 1
                if self.budget.left < 0:
                    return None
                found = self.visit(entry, prefix + entry.name, depth, ignores)
                if found is not None:
                    return found
        return None

    def visit(self, entry: os.DirEntry[str], relative: str, depth: int,
              ignores: Ignores | None) -> tuple[str, str] | None:
        name, tree = entry.name, self.tree
        if not tree.hidden and name.startswith("."):
            return None
        try:
            link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=tree.follow)
        except OSError:
            return None
        if ignores is not None and ignores.ignored(relative, is_dir):
            return None
        real = os.path.realpath(entry.path) if link else entry.path
        if is_dir:
            deeper = tree.depth is None or depth < tree.depth
            if deeper and real not in self.entered and not _skipped_dir(entry.path, name, tree):
                self.entered.add(real)
                self.queue.append((entry.path, relative + "/", depth + 1, ignores))
            return None
        if tree.include and not any(may_match(relative, name, g, tree.fold)
                                    for g in tree.include):
            return None
        if any(must_match(relative, name, g, tree.fold) for g in tree.exclude):
            return None
        hit = is_secret(entry.path, self.secrets) or (
            is_secret(real, self.secrets) if link else None)
        if hit is None or (hit.endswith(".pem") and not self.holds_private_key(real)):
            return None
        return relative, hit

    def holds_private_key(self, path: str) -> bool:
        """A PEM file with a private key in its first 64 KiB; unreadable, not a regular
        file (a FIFO would block the read), or past the call's ``MAX_PEMS``: taken to
        hold one."""
        self.budget.pems -= 1
        if self.budget.pems < 0:
            return True
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            return True
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return True
            return _PRIVATE in os.read(fd, _PEM_HEAD)
        except OSError:
            return True
        finally:
            os.close(fd)


def _skipped_dir(path: str, name: str, tree: Tree) -> bool:
    if tree.top and name == ".git":
        return True  # git does not add its own directory
    if name in _INSTALLS or any(must_match(name, name, g, tree.fold) for g in tree.exclude_dirs):
        return True
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))  # a virtualenv


# The tools read globs with fnmatch(3) or globset, not Python's fnmatch: ``[^x]`` negates
# as ``[!x]`` does (unless POSIXLY_CORRECT is set), a backslash escapes (unless the tool
# was built not to), and classes
# like ``[[:alpha:]]`` exist. Where the readings differ, a glob that admits files is taken
# to admit the name, and one that leaves files out to leave it out only when every
# reading does: a difference costs a question, never a secret.
_CARET = re.compile(r"\[\^")
_ESCAPE = re.compile(r"\\(.)")


def may_match(relative: str, name: str, glob: str, fold: bool = False) -> bool:
    """An including glob (``--include``, ``-g``, ``find -name``) may admit the file: on
    its name, or on its path when the glob has a ``/``."""
    if "[:" in glob:
        return True
    return any(_fnmatch(relative, name, g, fold) for g in _readings(glob))


def must_match(relative: str, name: str, glob: str, fold: bool = False) -> bool:
    """An excluding glob (``--exclude``, ``-g '!…'``) leaves the file out, in every reading."""
    if "[:" in glob:
        return False
    return all(_fnmatch(relative, name, g, fold) for g in _readings(glob))


def _readings(glob: str) -> tuple[str, ...]:
    """``[^x]`` as a negation and as a class holding ``^`` (``POSIXLY_CORRECT``), each
    with and without backslash escapes."""
    carets = (glob, _CARET.sub("[!", glob)) if "[^" in glob else (glob,)
    if "\\" not in glob:
        return carets
    return carets + tuple(_ESCAPE.sub(
        lambda m: f"[{m.group(1)}]" if m.group(1) in "*?[" else m.group(1), g) for g in carets)


def _fnmatch(relative: str, name: str, glob: str, fold: bool) -> bool:
    text = relative if "/" in glob else name
    glob = glob.lstrip("/")
    if fold:
        text, glob = text.casefold(), glob.casefold()
    return fnmatch.fnmatchcase(text, glob)
