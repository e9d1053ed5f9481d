"""Who is asking: a bearer token (agents, scripts, the CLI) or the inbox's session cookie.

The cookie holds the approver's token itself — HttpOnly, SameSite=Strict,
Secure behind https — so any server sharing the database accepts it, and
removing the user ends every session at once. Requests authenticated by the
cookie that change state must also carry the CSRF token, an HMAC of the
token's hash: derived, never stored, the same on every server, and useless
without the cookie it belongs to.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Request

from signoff.errors import Forbidden, Unauthenticated
from signoff.gate import Gate
from signoff.identity import Identity, IdentityKind

COOKIE = "signoff_session"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthenticated("Authorization must be 'Bearer <token>'", code="unauthenticated")
    return value.strip()


def session_token(request: Request) -> tuple[str | None, bool]:
    """The token and whether it came from the cookie (and so needs CSRF on writes)."""
    token = bearer(request)
    if token is not None:
        return token, False
    cookie = request.cookies.get(COOKIE)
    return (cookie, True) if cookie else (None, False)


def csrf_for(token: str) -> str:
    digest = hashlib.sha256(token.encode()).digest()
    return hmac.new(digest, b"signoff-csrf-v1", hashlib.sha256).hexdigest()


def check_csrf(token: str, supplied: str | None) -> None:
    if not supplied or not hmac.compare_digest(csrf_for(token), supplied):
        raise Forbidden("missing or wrong CSRF token; reload the page", code="csrf_failed")


async def authenticate(gate: Gate, request: Request, *, csrf: str | None = None) -> Identity:
    """The identity behind this request; cookie-authenticated writes need the CSRF token
    (from ``csrf`` — a form field — or the ``X-CSRF-Token`` header)."""
    from starlette.concurrency import run_in_threadpool  # noqa: PLC0415

    token, via_cookie = session_token(request)
    if token is None:
        raise Unauthenticated("sign in, or send 'Authorization: Bearer <token>'",
                              code="unauthenticated")
    identity = await run_in_threadpool(gate.authenticate, token)
    if via_cookie and request.method not in ("GET", "HEAD", "OPTIONS"):
        check_csrf(token, csrf or request.headers.get(CSRF_HEADER))
    request.state.identity = identity
    request.state.token = token
    return identity


def require_decider(identity: Identity) -> None:
    if identity.kind is IdentityKind.AGENT:
        raise Forbidden(f"{identity.name} is an agent identity and cannot decide",
                        code="agent_cannot_decide")


def require_admin(identity: Identity) -> None:
    if identity.kind is not IdentityKind.ADMIN:
        raise Forbidden(f"{identity.name} is not an admin", code="admin_required")
