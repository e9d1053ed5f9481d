"""Where the gate's own files lie against the workspace root: the one-line warning
``signoff serve`` and ``signoff init`` print, and what ``signoff doctor`` checks.

An agent's file tools and shell work in the workspace. A policy or a database there is one
``write_file`` (or ``sqlite3``) away from being rewritten by the agent it judges, and the
policy engine's protection of them is only as good as its view of every command; outside,
beyond reach of the agent's OS user, it does not depend on that view. A warning, not an
error: a first look (``signoff init signoff.toml --root "$PWD"``) is fine where it is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from signoff.cli.common import DEFAULT_DB, inside_root

SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")  # what SQLite writes beside its file
POLICY_HOME = "/etc/signoff/signoff.toml"
DATABASE_HOME = "/var/lib/signoff/signoff.db"


def database_target(db: str | None) -> str:
    """The database a command opens: ``--db``, else ``$SIGNOFF_DB``, else ``signoff.db``."""
    return db or os.environ.get("SIGNOFF_DB") or DEFAULT_DB


def sqlite_path(target: str) -> str | None:
    """The SQLite file ``target`` names, or ``None`` for any other database."""
    if "://" not in target:
        return None if target == ":memory:" else target
    scheme, rest = target.split("://", 1)
    return rest if scheme.lower() == "sqlite" else None


def is_postgres(target: str) -> bool:
    scheme, sep, _ = target.partition("://")
    return bool(sep) and scheme.lower() in ("postgresql", "postgres")


def sqlite_files(path: str) -> list[str]:
    """The database file and the journal files SQLite keeps beside it."""
    return [path, *(path + suffix for suffix in SQLITE_COMPANIONS)]


def inside(path: str | Path, root: str | Path) -> bool:
    """Whether ``path`` lies in ``root`` (or is it), as written or with symlinks resolved
    (both ends); ``/ws_evil`` is not in ``/ws``."""
    return inside_root(str(path), str(root))


def warn_if_inside(root: str | None, files: Sequence[tuple[str, str, str]]) -> str | None:
    """Print (to stderr) and return the one warning line for the ``(name, path, fix)`` of
    ``files`` that lie inside the workspace ``root``; ``None`` when none does."""
    if root is None:
        return None
    found = [(name, fix) for name, path, fix in files if inside(path, root)]
    if not found:
        return None
    names = " and ".join(name for name, _ in found)
    verb, it = ("are", "them") if len(found) > 1 else ("is", "it")
    fixes = ", ".join(fix for _, fix in found)
    line = (f"signoff: warning: {names} {verb} inside the workspace root {root}: an agent's "
            f"tools can rewrite {it}; move {it} outside ({fixes}) — see docs/security.md")
    print(line, file=sys.stderr)
    return line


def _with_database(files: list[tuple[str, str, str]], db: str | None, fix: str
                   ) -> list[tuple[str, str, str]]:
    target = database_target(db)
    path = sqlite_path(target)
    return files if path is None else [*files, (target, path, fix)]


def warn_serve(root: str | None, policy: str, db: str | None) -> str | None:
    """``signoff serve``'s warning: its policy or SQLite file in the workspace."""
    return warn_if_inside(root, _with_database(
        [(policy, policy, f"--policy {POLICY_HOME}")], db, f"--db {DATABASE_HOME}"))


def warn_init(root: str, policy: str) -> str | None:
    """``signoff init``'s warning: the policy it wrote, or the SQLite file ``signoff serve``
    would open from here, in the workspace."""
    return warn_if_inside(root, _with_database(
        [(policy, policy, f"signoff init {POLICY_HOME} --root {root}")], None,
        f"signoff serve --db {DATABASE_HOME}"))
