"""Who may decide: identities with roles, authenticated by bearer tokens.

A token is shown once, when the user is added; the store keeps only its
SHA-256. A decision's approver is always the authenticated identity — no
request body or CLI flag can name it.
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
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,63}$")


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


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_hash(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def check_name(name: str) -> str:
    if not _NAME.match(name):
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
