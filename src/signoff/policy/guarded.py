"""The gate's own files, registered from the running configuration as protected paths.

A gate whose policy an agent can rewrite (``sed -i 's/ask/allow/' signoff.toml``) or whose
database it can edit (``sqlite3 signoff.db "UPDATE …"``) protects nothing, and these files
are named by the configuration, not by a name like ``signoff.*``: the policy file it loaded
(``load_policy_file``), the SQLite database of its store and that database's ``-wal``,
``-shm`` and ``-journal`` (``Gate``, ``signoff check``), and the files the server's
configuration names (``[notify]``'s ``ca_file``). Each is kept as configured and resolved
(``Guarded``) for ``signoff.policy.protected`` to compare after resolution. A read of the
database is a ``secret_read``: its paths join the policy's secrets.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from signoff.policy.engine import Policy
    from signoff.policy.spec import PolicyConfig

# What a SQLite database keeps beside its file: the write-ahead log, its index, the
# rollback journal. Each is the database as much as the file is.
DATABASE_SUFFIXES = ("", "-wal", "-shm", "-journal")
_DATABASE_SECRETS = ("", "-wal", "-journal")  # the ones that hold rows


@dataclass(frozen=True, slots=True)
class Guarded:
    """One file of the gate's own: as configured (absolute), resolved, and what it is."""

    path: str
    real: str
    role: str


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


POLICY_FILE = "the policy file this gate loaded"


def guard_policy_file(config: PolicyConfig, path: str | os.PathLike[str]) -> PolicyConfig:
    """The policy file ``config`` was loaded from: agents may read it, never change it."""
    return guard_files(config, [path], POLICY_FILE)


def policy_file(config: PolicyConfig) -> str | None:
    """The file ``config`` was loaded from (``load_policy_file``), absolute; ``None`` for a
    policy made from text (``Policy.from_toml``) or in code."""
    return next((g.path for g in config.guarded if g.role == POLICY_FILE), None)


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


def guard_policies(policies: Iterable[Policy], paths: Iterable[str | os.PathLike[str] | None],
                   role: str, *, secret: bool = False) -> None:
    """Protect files a running gate's configuration names (the server's ``[notify]``
    ``ca_file``, its signing key) in the policies it judges with; ``secret``: reading one
    is a ``secret_read`` too."""
    named = [p for p in paths if p]
    if not named:
        return
    for policy in policies:
        policy.config = guard_files(policy.config, named, role, secret=secret)


def escape(path: str) -> str:
    """``path`` as a pattern that matches only itself (its glob characters quoted)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)
