"""The checks of ``signoff doctor``, one function each: the policy, the database, the OS
users, the reviewer's key. Each returns one ``Check``: ``ok``; ``warn`` (not checked, and
why; or worth a look); ``fail`` (the trust boundary is open, or ``signoff serve`` would
not start) — with the fix for anything but ``ok``.

The gate's user is the one running the doctor: run it as the server runs.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signoff.cli.access import ANYONE, OsUser, group_name, how_changed, may_read
from signoff.cli.boundary import DATABASE_HOME, POLICY_HOME, inside, sqlite_files
from signoff.errors import SignoffError
from signoff.extras import missing
from signoff.policy.config import load_policy_file
from signoff.policy.spec import PolicyConfig

OK, WARN, FAIL = "ok", "warn", "fail"
PG_TIMEOUT = 3  # seconds for the connection (libpq's least is 2)
APART = "run the agent's tools as another OS user than the gate (docs/security.md)"


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    status: str
    message: str
    fix: str | None = None
    code: str | None = None  # the typed error behind a failure, when there is one

    def __post_init__(self) -> None:  # one line each, whatever a driver's message holds
        object.__setattr__(self, "message", " ".join(self.message.split()))

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.id, "status": self.status, "message": self.message,
                "fix": self.fix, "code": self.code}


def load_policy(path: str) -> tuple[PolicyConfig | None, Check]:
    """The policy as ``signoff serve`` reads it: the rules, ``[server]`` and ``[notify]``
    (its secrets' variables included). The reviewer is left to ``review_key``."""
    from signoff.notify.config import load_notify  # noqa: PLC0415 (heavy imports)
    from signoff.server.settings import load_settings  # noqa: PLC0415

    try:
        config = load_policy_file(path)
        load_settings(policy_path=path)
        load_notify(path)
    except SignoffError as exc:
        fix = (f"write one with `signoff init {path} --root WORKSPACE`, or pass --policy FILE"
               if exc.code == "policy_unreadable" else "correct what the message names")
        return None, Check("policy.loads", FAIL, f"{path} does not load: {exc.message}", fix,
                           exc.code)
    return config, Check("policy.loads", OK, f"{path} loads (policy version {config.version})")


def _root(config: PolicyConfig | None, check: str) -> str | Check:
    if config is None:
        return Check(check, WARN, "not checked: the policy did not load")
    if config.workspace is None:
        return Check(check, WARN, "not checked: the policy names no workspace root",
                     "set [workspace] root to the directory the agent works in")
    return config.workspace.root


def policy_outside(path: str, config: PolicyConfig | None) -> Check:
    root = _root(config, "policy.outside")
    if isinstance(root, Check):
        return root
    if inside(path, root):
        return Check("policy.outside", FAIL, f"{path} is inside the workspace root {root}: "
                     "an agent's tools can rewrite it",
                     f"move it outside, e.g. to {POLICY_HOME}, and pass --policy {POLICY_HOME}")
    return Check("policy.outside", OK, f"{path} is outside the workspace root {root}")


def database_outside(path: str, config: PolicyConfig | None) -> Check:
    root = _root(config, "database.outside")
    if isinstance(root, Check):
        return root
    found = [f for f in sqlite_files(path) if (f == path or os.path.lexists(f))
             and inside(f, root)]
    if found:
        verb = "is" if len(found) == 1 else "are"
        return Check("database.outside", FAIL, f"{', '.join(found)} {verb} inside the "
                     f"workspace root {root}: an agent's tools can rewrite the requests and "
                     "the audit",
                     f"move the database outside, e.g. --db {DATABASE_HOME} (or $SIGNOFF_DB)")
    return Check("database.outside", OK, f"{path} and its journal files are outside the "
                 f"workspace root {root}")


def _who(user: OsUser) -> str:
    return "any user" if user is ANYONE else f"the agent's user {user.name!r}"


def _changer(files: list[str], agent: OsUser | None) -> str | None:
    """Who may change one of ``files``, and how: any user first, else the agent's user."""
    for user in [ANYONE] + ([agent] if agent else []):
        for path in files:
            route = how_changed(user, path)
            if route is not None:
                return f"{_who(user)} {route}"
    return None


def _group_writable(files: list[str]) -> list[str]:
    found: dict[str, str] = {}
    for path in files:
        for place in (path, os.path.dirname(os.path.abspath(path))):
            try:
                st = os.stat(place)
            except OSError:
                continue
            if st.st_mode & 0o020:
                found.setdefault(place, f"group {group_name(st.st_gid)!r} may write {place}")
    return list(found.values())


def permissions(check: str, files: list[str], agent: OsUser | None, *, label: str,
                secret: bool, fix: str) -> Check:
    """Nobody but the gate may change ``files`` (or create one that is missing): not the
    agent's user, not any user; and, for a ``secret`` (the database), the agent's user may
    not read the first of them either."""
    changer = _changer(files, agent)
    if changer is not None:
        return Check(check, FAIL, changer, fix)
    if agent is None:
        group = _group_writable(files)
        if group:
            return Check(check, WARN, "; ".join(group) + ": who is in it?",
                         "name the agent's user with --agent-user NAME, or chmod g-w")
    reader = agent or ANYONE
    if secret and may_read(reader, files[0]):
        home = os.path.dirname(os.path.abspath(files[0]))
        return Check(check, WARN, f"{_who(reader)} may read {files[0]} (the requests' "
                     "arguments, the audit)", f"chmod 0700 {home}")
    if not os.path.lexists(files[0]):
        label += " (not created yet)"
    if agent is None:
        return Check(check, OK, f"no other user may change {label}")
    return Check(check, OK, f"neither {agent.name!r} nor any other user may change {label}")


def users_apart(gate: OsUser, agent: OsUser | None) -> Check:
    if agent is None:
        return Check("users.separate", WARN, f"not checked: the gate runs as {gate.name!r} "
                     f"(uid {gate.uid}); which user do the agent's tools run as?",
                     "name it: signoff doctor --agent-user NAME")
    if agent.uid == gate.uid:
        return Check("users.separate", FAIL, f"the gate and the agent's tools both run as "
                     f"{gate.name!r} (uid {gate.uid}): a tool that runs code can change "
                     "anything the gate can", APART)
    if agent.uid == 0:
        return Check("users.separate", FAIL, "the agent's tools run as root: they can change "
                     "anything, the gate's files included", APART)
    return Check("users.separate", OK, f"the gate runs as {gate.name!r} (uid {gate.uid}), "
                 f"the agent's tools as {agent.name!r} (uid {agent.uid})")


def review_key(config: PolicyConfig | None) -> Check:
    """``signoff serve`` builds the ``[review]`` reviewer at start: a model reviewer needs
    its package and its key (from the environment only), whatever the review mode."""
    if config is None:
        return Check("review.key", WARN, "not checked: the policy did not load")
    review = config.review
    if review.reviewer != "openai":
        return Check("review.key", OK, f"the auto reviewer is {review.reviewer!r}: no key "
                     "needed")
    if importlib.util.find_spec("openai") is None:
        return Check("review.key", FAIL, 'reviewer = "openai" needs the openai package',
                     "pip install 'signoff[review]'", "review_unavailable")
    if not os.environ.get(review.api_key_env):
        return Check("review.key", FAIL, f"the auto reviewer reads its key from "
                     f"${review.api_key_env}, which is not set: signoff serve would not start",
                     f"set {review.api_key_env} in the server's environment (for an endpoint "
                     "that needs no key, to any value)", "review_no_key")
    return Check("review.key", OK, f"the auto reviewer's key is set (${review.api_key_env}; "
                 f"model {review.model})")


def postgres_reachable(url: str) -> Check:
    """One connection within ``PG_TIMEOUT`` seconds, and the schema's version."""
    try:
        import psycopg  # noqa: PLC0415 (only for PostgreSQL)

        from signoff.store.postgres import connect_error, redacted, schema_version  # noqa: PLC0415
    except ImportError as exc:
        absent = missing("postgres", "a postgresql:// database", exc.name)
        return Check("database.reachable", FAIL, absent.message,
                     "pip install 'signoff[postgres]'", absent.code)
    from signoff.store.schema import MIGRATIONS  # noqa: PLC0415

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=PG_TIMEOUT) as conn:
            version = schema_version(conn)
    except psycopg.Error as exc:
        error = connect_error(url, exc)
        fix = ("create it, then migrate it, as the message says"
               if error.code == "database_missing" else
               "start it, or correct --db (or $SIGNOFF_DB)")
        return Check("database.reachable", FAIL, error.message, fix, error.code)
    shown = redacted(url)
    if version < len(MIGRATIONS):
        return Check("database.reachable", FAIL, f"{shown} answers, at schema version "
                     f"{version}; this signoff needs {len(MIGRATIONS)}",
                     f"signoff db migrate --db '{shown}'", "schema_outdated")
    return Check("database.reachable", OK, f"{shown} answers, schema version {version}")


def sqlite_checks(path: str, config: PolicyConfig | None, agent: OsUser | None
                  ) -> list[Check]:
    fix = (f"keep it in a directory only the gate's user may write and reach, e.g. "
           f"{Path(DATABASE_HOME).parent} (owned by the gate's user, mode 0700)")
    return [database_outside(path, config),
            permissions("database.permissions", sqlite_files(path), agent, secret=True,
                        label=f"{path} and its journal files", fix=fix)]
