"""Rows of the user lifecycle: users, accounts, login links and sessions, for both SQL stores.

``AccountRows`` is mixed into ``SqlTx`` (writes and reads inside a transaction),
``AccountReads`` into ``SqlStore`` (short reads). Every check of a credential
reads the database, never a process's memory, so a user disabled or a session
ended on one server is refused by every server at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from signoff.identity import Account, Identity, IdentityKind, Session
from signoff.store.rows import identity_from_row

if TYPE_CHECKING:
    from signoff.store.dialect import Dialect
    from signoff.store.sqltx import SqlTx

_ACCOUNT = ("SELECT name, kind, roles, disabled, created_at, "
            "COALESCE(token_issued_at, created_at), token_expires_at, removed_at FROM users")
_SESSION_COLUMNS = "s.id, s.user_name, s.created_at, s.last_seen, s.expires_at, " \
                   "s.idle_timeout, s.via"
LINK_KEPT = 86400.0  # a used or expired link is remembered this long: "already used" stays true


def account_from_row(row: Sequence[Any]) -> Account:
    name, kind, roles, disabled, created_at, issued, expires, removed = row
    identity = Identity(name=name, kind=IdentityKind(kind), roles=tuple(json.loads(roles)),
                        disabled=bool(disabled))
    return Account(identity=identity, created_at=float(created_at), token_issued_at=float(issued),
                   token_expires_at=expires, removed_at=removed)


def session_from_row(row: Sequence[Any]) -> Session:
    id_, user, created, seen, expires, idle, via = row
    return Session(id=id_, user=user, created_at=float(created), last_seen=float(seen),
                   expires_at=float(expires), idle_timeout=float(idle), via=via)


SESSION_SWEEP_AFTER = 86_400.0  # seconds an ended session is kept to explain itself

class AccountRows:
    """Transaction methods; ``SqlTx`` supplies ``_exec``, ``_one`` and ``dialect``."""

    dialect: Dialect

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _one(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _lock(self) -> str:
        return self.dialect.lock_suffix

    # ---- users -------------------------------------------------------------------------------

    def insert_user(self, identity: Identity, *, token_hash: str, at: float,
                    expires_at: float | None = None) -> None:
        self._exec("INSERT INTO users (name, kind, roles, token_hash, disabled, created_at, "
                   "token_issued_at, token_expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (identity.name, identity.kind.value, json.dumps(list(identity.roles)),
                    token_hash, int(identity.disabled), at, at, expires_at))

    def _user(self, where: str, value: str) -> Identity | None:
        row = self._one(f"SELECT name, kind, roles, disabled FROM users WHERE {where} = ?",
                        (value,))
        return None if row is None else identity_from_row(*row)

    def get_user(self, name: str) -> Identity | None:
        return self._user("name", name)

    def user_by_token(self, token_hash: str) -> Identity | None:
        return self._user("token_hash", token_hash)

    def set_user(self, name: str, *, roles: tuple[str, ...] | None = None,
                 disabled: bool | None = None) -> bool:
        changed = False
        if roles is not None:
            cursor = self._exec("UPDATE users SET roles = ? WHERE name = ?",
                                (json.dumps(list(roles)), name))
            changed = cursor.rowcount == 1
        if disabled is not None:
            cursor = self._exec("UPDATE users SET disabled = ? WHERE name = ?",
                                (int(disabled), name))
            changed = cursor.rowcount == 1
        return changed

    # ---- accounts ------------------------------------------------------------------------------

    def account(self, name: str, *, lock: bool = False) -> Account | None:
        row = self._one(f"{_ACCOUNT} WHERE name = ?{self._lock() if lock else ''}", (name,))
        return None if row is None else account_from_row(row)

    def active_admins(self, *, at: float | None = None) -> list[str]:
        """Admins neither disabled nor removed — and, given ``at``, whose token has not
        expired by then: admins who can sign in. Their rows are held until commit in name
        order (two admins disabling each other at once cannot both pass the last-admin
        check)."""
        expiry, params = ("", ()) if at is None else \
            (" AND (token_expires_at IS NULL OR token_expires_at > ?)", (at,))
        rows = self._exec(f"SELECT name FROM users WHERE kind = 'admin' AND disabled = 0 "
                          f"AND removed_at IS NULL{expiry} ORDER BY name{self._lock()}",
                          params).fetchall()
        return [r[0] for r in rows]

    def set_token(self, name: str, *, token_hash: str, at: float,
                  expires_at: float | None) -> bool:
        cursor = self._exec("UPDATE users SET token_hash = ?, token_issued_at = ?, "
                            "token_expires_at = ? WHERE name = ? AND removed_at IS NULL",
                            (token_hash, at, expires_at, name))
        return bool(cursor.rowcount == 1)

    def mark_removed(self, name: str, *, at: float, tombstone_hash: str) -> bool:
        """Disable for good and replace the token's hash by one no token has."""
        cursor = self._exec("UPDATE users SET removed_at = ?, disabled = 1, token_hash = ?, "
                            "token_expires_at = NULL WHERE name = ? AND removed_at IS NULL",
                            (at, tombstone_hash, name))
        return bool(cursor.rowcount == 1)

    # ---- login links ---------------------------------------------------------------------------

    def insert_login_link(self, code_hash: str, *, user: str, at: float, expires_at: float,
                          created_by: str | None) -> None:
        self._exec("DELETE FROM login_links WHERE expires_at < ?", (at - LINK_KEPT,))
        self._exec("INSERT INTO login_links (code_hash, user_name, created_at, expires_at, "
                   "used_at, created_by) VALUES (?, ?, ?, ?, NULL, ?)",
                   (code_hash, user, at, expires_at, created_by))

    def end_login_links(self, user: str, *, at: float) -> int:
        """The user's unused links stop working now (they read as expired): a link made
        before a disable, a removal or a rotation must not sign in after it."""
        cursor = self._exec("UPDATE login_links SET expires_at = ? WHERE user_name = ? AND "
                            "used_at IS NULL AND expires_at > ?", (at, user, at))
        return int(cursor.rowcount)

    def use_login_link(self, code_hash: str, *, at: float) -> tuple[str, str | None]:
        """Mark the link used, once: ``("ok", user)``; else ``("used" | "expired" |
        "unknown", user or None)`` and nothing changes."""
        used_now = self._exec("UPDATE login_links SET used_at = ? WHERE code_hash = ? AND "
                              "used_at IS NULL AND expires_at > ?",
                              (at, code_hash, at)).rowcount == 1
        row = self._one("SELECT user_name, used_at, expires_at FROM login_links "
                        "WHERE code_hash = ?", (code_hash,))
        if row is None:
            return "unknown", None
        if used_now:  # read before the SELECT: the cursor is shared
            return "ok", row[0]
        return ("used" if row[1] is not None else "expired"), row[0]

    # ---- sessions ------------------------------------------------------------------------------

    def insert_session(self, session: Session, *, secret_hash: str) -> None:
        # Sessions that ran out a day ago are swept here, not at once: until then their
        # holder is told "session expired", not "you are signed out".
        swept = session.created_at - SESSION_SWEEP_AFTER
        self._exec("DELETE FROM sessions WHERE expires_at <= ? OR last_seen + idle_timeout <= ?",
                   (swept, swept))
        self._exec("INSERT INTO sessions (id, secret_hash, user_name, created_at, last_seen, "
                   "expires_at, idle_timeout, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (session.id, secret_hash, session.user, session.created_at,
                    session.last_seen, session.expires_at, session.idle_timeout, session.via))

    def touch_session(self, session_id: str, *, at: float) -> None:
        self._exec("UPDATE sessions SET last_seen = ? WHERE id = ? AND last_seen < ?",
                   (at, session_id, at))

    def delete_sessions(self, *, user: str | None = None, session_id: str | None = None,
                        secret_hash: str | None = None) -> list[Session]:
        """End sessions (by user, id or secret — all given must match); the ones ended."""
        clauses, params = [], []
        for column, value in (("s.user_name", user), ("s.id", session_id),
                              ("s.secret_hash", secret_hash)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if not clauses:
            raise ValueError("delete_sessions needs a user, an id or a secret")
        where = " AND ".join(clauses)
        rows = self._exec(f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE {where} "
                          f"ORDER BY s.created_at, s.id", params).fetchall()
        if rows:
            marks = ", ".join("?" for _ in rows)
            self._exec(f"DELETE FROM sessions WHERE id IN ({marks})", [r[0] for r in rows])
        return [session_from_row(r) for r in rows]


class AccountReads:
    """Short reads; ``SqlStore`` supplies ``_reader``."""

    def _reader(self) -> AbstractContextManager[SqlTx]:
        raise NotImplementedError

    def account_by_token(self, token_hash: str) -> Account | None:
        with self._reader() as tx:
            row = tx._one(f"{_ACCOUNT} WHERE token_hash = ?", (token_hash,))
        return None if row is None else account_from_row(row)

    def accounts(self, *, removed: bool = False) -> list[Account]:
        where = "" if removed else " WHERE removed_at IS NULL"
        with self._reader() as tx:
            rows = tx._exec(f"{_ACCOUNT}{where} ORDER BY name").fetchall()
        return [account_from_row(r) for r in rows]

    def session_by_secret(self, secret_hash: str) -> tuple[Session, Account] | None:
        """The session and its user's account, read together: one query per request."""
        with self._reader() as tx:
            row = tx._one(f"SELECT {_SESSION_COLUMNS}, u.name, u.kind, u.roles, u.disabled, "
                          "u.created_at, COALESCE(u.token_issued_at, u.created_at), "
                          "u.token_expires_at, u.removed_at FROM sessions s "
                          "JOIN users u ON u.name = s.user_name WHERE s.secret_hash = ?",
                          (secret_hash,))
        if row is None:
            return None
        return session_from_row(row[:7]), account_from_row(row[7:])

    def sessions_of(self, user: str | None = None) -> list[Session]:
        """A user's sessions (every user's with ``None``), oldest first, expired ones too."""
        where, params = (" WHERE s.user_name = ?", (user,)) if user is not None else ("", ())
        with self._reader() as tx:
            rows = tx._exec(f"SELECT {_SESSION_COLUMNS} FROM sessions s{where} "
                            "ORDER BY s.created_at, s.id", params).fetchall()
        return [session_from_row(r) for r in rows]
