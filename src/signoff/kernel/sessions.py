"""Signing in to the inbox: one-time login links and server-side sessions (a part of the gate).

A login link carries a random code, good once and for minutes; a person may
also paste their token into the sign-in form (a POST, never a URL). Either is
exchanged for a session: a random secret in an HttpOnly cookie, of which the
database keeps only a hash, with an absolute expiry and an idle timeout fixed
when it starts. The cookie is never a token: it works nowhere but the session
check, and ending the session (logout, disable, remove, rotate, revoke) ends it
on every server at once, since every check reads the database.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from signoff.audit import AuditKind, to_us
from signoff.errors import Conflict, Expired, Forbidden, NotFound, Unauthenticated
from signoff.identity import Account, Identity, IdentityKind, Session, token_hash
from signoff.store.base import Store, Tx

LINK_PREFIX = "sol_"
SECRET_PREFIX = "sos_"  # noqa: S105 (a visible prefix, not a secret)
SESSION_PREFIX = "ses_"
LINK_TTL = 600.0  # seconds a login link is good for, by default


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionLimits:
    """How long a login link is good, and a session's idle and absolute limits (seconds)."""

    link_ttl: float = LINK_TTL
    idle: float = 8 * 3600.0
    lifetime: float = 7 * 86400.0


DEFAULT_LIMITS = SessionLimits()

def login_url(base_url: str, code: str) -> str:
    """Where a login link's code is opened (``GET /login?code=…``)."""
    return f"{base_url.rstrip('/')}/login?code={quote(code, safe='')}"


def csrf_for(secret: str) -> str:
    """The CSRF token of a session: derived from its secret, the same on every server,
    never stored, useless without the cookie it belongs to."""
    return hmac.new(secret.encode(), b"signoff-csrf-v2", hashlib.sha256).hexdigest()


def check_csrf(secret: str, supplied: str | None) -> None:
    if not supplied or not hmac.compare_digest(csrf_for(secret), supplied):
        raise Forbidden("missing or wrong CSRF token; reload the page", code="csrf_failed")


def _may_sign_in(account: Account | None, name: str) -> Account:
    if account is None:
        raise NotFound(f"no user {name!r}", code="not_found")
    if account.removed_at is not None:
        raise Conflict(f"user {name!r} was removed", code="user_removed")
    if account.identity.disabled:
        raise Forbidden(f"{name} is disabled", code="identity_disabled")
    if account.identity.kind is IdentityKind.AGENT:
        raise Forbidden(f"{name} is an agent identity; agents do not sign in to the inbox",
                        code="agent_cannot_sign_in")
    return account


class SignIn:
    """Login links and inbox sessions: how a person signs in, stays in and leaves."""

    def __init__(self, store: Store, *, clock: Callable[[], float],
                 authenticate: Callable[[str | None], Identity]) -> None:
        self.store = store
        self.clock = clock
        self.authenticate = authenticate  # a token's identity (``Accounts.authenticate``)

    def mint_login_link(self, name: str, *, ttl: float = LINK_TTL,
                        actor: str | None = None) -> tuple[str, float]:
        """A one-time code that signs ``name`` in (``/login?code=…``) and when it expires."""
        now = self.clock()
        code = LINK_PREFIX + secrets.token_urlsafe(24)
        expires_at = now + ttl
        with self.store.transaction() as tx:
            _may_sign_in(tx.account(name), name)
            tx.insert_login_link(token_hash(code), user=name, at=now, expires_at=expires_at,
                                 created_by=actor)
            tx.append_audit(AuditKind.USER_LOGIN_LINK, at_us=to_us(now), request_id=None,
                            actor=actor, data={"name": name, "expires_at": expires_at})
        return code, expires_at

    def redeem_login_link(self, code: str, *,
                          limits: SessionLimits = SessionLimits()) -> tuple[str, Session]:
        """Use the link (once) for a new session: its secret (for the cookie) and itself."""
        now = self.clock()
        with self.store.transaction() as tx:
            outcome, user = tx.use_login_link(token_hash(code), at=now)
            if outcome == "used":
                raise Expired("this login link was already used; ask for a new one "
                              "(signoff users login NAME)", code="login_link_used")
            if outcome == "expired":
                raise Expired("this login link expired; ask for a new one "
                              "(signoff users login NAME)", code="login_link_expired")
            if outcome != "ok" or user is None:
                raise Unauthenticated("this is not a login link of this server",
                                      code="login_link_unknown")
            account = _may_sign_in(tx.account(user, lock=True), user)
            return self._start(tx, account, limits, via="link", now=now)

    def sign_in(self, token: str, *,
                limits: SessionLimits = SessionLimits()) -> tuple[str, Session]:
        """A session for the holder of ``token`` (the sign-in form's POST)."""
        identity = self.authenticate(token)
        now = self.clock()
        with self.store.transaction() as tx:
            account = _may_sign_in(tx.account(identity.name, lock=True), identity.name)
            return self._start(tx, account, limits, via="token", now=now)

    def _start(self, tx: Tx, account: Account, limits: SessionLimits, *, via: str,
               now: float) -> tuple[str, Session]:
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        session = Session(id=SESSION_PREFIX + secrets.token_hex(8), user=account.name,
                          created_at=now, last_seen=now, expires_at=now + limits.lifetime,
                          idle_timeout=limits.idle, via=via)
        tx.insert_session(session, secret_hash=token_hash(secret))
        tx.append_audit(AuditKind.SESSION_STARTED, at_us=to_us(now), request_id=None,
                        actor=account.name, data={"name": account.name, "session": session.id,
                                                  "via": via, "expires_at": session.expires_at})
        return secret, session

    def session_identity(self, secret: str, *, touch: bool = True) -> tuple[Identity, Session]:
        """Who the cookie's session belongs to, judged now; ``Unauthenticated`` when it
        ended (``unauthenticated``), ran out (``session_expired``) or its user may no
        longer sign in (``identity_disabled``). A use counts as activity (``touch``);
        an open event stream checking that it may go on does not."""
        found = self.store.session_by_secret(token_hash(secret))
        if found is None:
            raise Unauthenticated("you are signed out; sign in again", code="unauthenticated")
        session, account = found
        now = self.clock()
        if account.removed_at is not None or account.identity.disabled:
            raise Unauthenticated(f"{account.name} is disabled", code="identity_disabled")
        if now >= session.ends_at():
            raise Unauthenticated("your session expired; sign in again",
                                  code="session_expired")
        # Record activity at most every quarter of the idle timeout (and every minute):
        # a page view is a read, not a write.
        if touch and now - session.last_seen >= min(60.0, session.idle_timeout / 4):
            with self.store.transaction() as tx:
                tx.touch_session(session.id, at=now)
        return account.identity, session

    def end_session(self, secret: str) -> Session | None:
        """Sign out: the session behind ``secret`` ends (``None``: it had already)."""
        now = self.clock()
        with self.store.transaction() as tx:
            ended = tx.delete_sessions(secret_hash=token_hash(secret))
            for session in ended:
                tx.append_audit(AuditKind.SESSION_ENDED, at_us=to_us(now), request_id=None,
                                actor=session.user, data={"name": session.user,
                                                          "session": session.id,
                                                          "reason": "logout"})
        return ended[0] if ended else None

    def revoke_sessions(self, name: str, *, session_id: str | None = None,
                        actor: str | None = None) -> list[Session]:
        """End one of ``name``'s sessions, or all of them; the ones ended."""
        now = self.clock()
        with self.store.transaction() as tx:
            if tx.account(name) is None:
                raise NotFound(f"no user {name!r}", code="not_found")
            ended = tx.delete_sessions(user=name, session_id=session_id)
            if session_id is not None and not ended:
                raise NotFound(f"{name} has no session {session_id!r}",
                               code="session_not_found")
            for session in ended:
                tx.append_audit(AuditKind.SESSION_ENDED, at_us=to_us(now), request_id=None,
                                actor=actor, data={"name": name, "session": session.id,
                                                   "reason": "revoked"})
        return ended

    def sessions(self, name: str) -> list[Session]:
        """``name``'s sessions that have not ended, oldest first."""
        with self.store.transaction() as tx:
            if tx.account(name) is None:
                raise NotFound(f"no user {name!r}", code="not_found")
        now = self.clock()
        return [s for s in self.store.sessions_of(name) if s.ends_at() > now]
