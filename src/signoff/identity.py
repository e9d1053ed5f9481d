"""Who may decide: identities with roles, authenticated by bearer tokens.

A token is shown once, when the user is added (or its token rotated); the
store keeps only its SHA-256, and may give it an expiry. A decision's approver
is always the authenticated identity — no request body or CLI flag can name it.
A removed user stays as a tombstone: decisions and audit events name users, so
a name once used is never handed to someone else.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from signoff.errors import ConfigurationError

TOKEN_PREFIX = "so_"  # noqa: S105 (a visible prefix, not a secret)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:-]{0,63}")  # matched whole (fullmatch)


class IdentityKind(enum.StrEnum):
    APPROVER = "approver"  # decides within its roles
    AGENT = "agent"  # proposes and waits; never decides
    ADMIN = "admin"  # an approver that may also manage users


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    name: str
    kind: IdentityKind = IdentityKind.APPROVER
    roles: tuple[str, ...] = ()
    disabled: bool = False

    @property
    def may_decide(self) -> bool:
        return self.kind is not IdentityKind.AGENT and not self.disabled

    def holds_any(self, roles: tuple[str, ...]) -> bool:
        """No roles required → any approver; else at least one of them."""
        return not roles or bool(set(roles) & set(self.roles))


@dataclass(frozen=True, slots=True, kw_only=True)
class Account:
    """A user as stored: the identity plus what its lifecycle needs."""

    identity: Identity
    created_at: float
    token_issued_at: float
    token_expires_at: float | None = None
    removed_at: float | None = None

    @property
    def name(self) -> str:
        return self.identity.name

    def status(self, now: float) -> str:
        """``removed``, ``disabled``, ``token_expired`` or ``active``."""
        if self.removed_at is not None:
            return "removed"
        if self.identity.disabled:
            return "disabled"
        if self.token_expires_at is not None and now >= self.token_expires_at:
            return "token_expired"
        return "active"

    def to_dict(self, now: float) -> dict[str, object]:
        ident = self.identity
        return {"name": ident.name, "kind": ident.kind.value, "roles": list(ident.roles),
                "status": self.status(now), "created_at": self.created_at,
                "token_issued_at": self.token_issued_at,
                "token_expires_at": self.token_expires_at, "removed_at": self.removed_at}


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """A signed-in browser: what a login link or a pasted token is exchanged for.

    ``id`` is public (listed, revoked by); the cookie holds a separate secret of which
    the store keeps only a hash. Both limits are fixed when the session starts, so every
    server sharing the database judges it alike.
    """

    id: str
    user: str
    created_at: float
    last_seen: float
    expires_at: float  # absolute: no activity extends it
    idle_timeout: float  # seconds without a request after which it ends
    via: str  # "link" or "token"

    def ends_at(self) -> float:
        return min(self.expires_at, self.last_seen + self.idle_timeout)

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "user": self.user, "created_at": self.created_at,
                "last_seen": self.last_seen, "expires_at": self.expires_at,
                "idle_timeout": self.idle_timeout, "ends_at": self.ends_at(), "via": self.via}


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_hash(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def check_name(name: str) -> str:
    """A user or role name, matched whole: ``re``'s ``$`` also matches before a final
    newline, which would let ``ann`` and a newline through — a second spelling of
    ``ann`` that reads the same wherever it is shown."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigurationError(
            f"user name {name!r} must be 1–64 letters, digits or _ . @ : -", code="invalid_name")
    return name


def parse_roles(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    roles = tuple(dict.fromkeys(r.strip() for r in text.split(",") if r.strip()))
    for role in roles:
        check_name(role)
    return roles
