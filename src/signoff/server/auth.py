"""Who is asking: a bearer token (agents, scripts, the CLI) or the inbox's session cookie.

The cookie holds a session's secret, never a token (``signoff.kernel.sessions``): a
bearer token is looked up among tokens only and a session secret among
sessions only, so neither works as the other. A session is read from the database
at every request, so one ended on any server is refused here at once; a token
checked a moment ago is answered from memory until a change to any account is heard
(``Gate.remembered_identity``; docs/server.md, "Who may do what").
Requests authenticated by the cookie that change state must also carry the
CSRF token derived from the session's secret.
"""

from __future__ import annotations

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from signoff.errors import Forbidden, Unauthenticated
from signoff.identity import Identity, IdentityKind
from signoff.kernel.gate import Gate
from signoff.kernel.sessions import check_csrf, csrf_for
from signoff.server.state import AppState, state_of

COOKIE = "signoff_session"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"

__all__ = ["COOKIE", "authenticate", "csrf_for", "require_admin", "require_decider"]


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthenticated("Authorization must be 'Bearer <token>'", code="unauthenticated")
    return value.strip()


async def authenticate(gate: Gate, request: Request, *, csrf: str | None = None) -> Identity:
    """The identity behind this request; cookie-authenticated writes need the CSRF token
    (from ``csrf`` — a form field — or the ``X-CSRF-Token`` header)."""
    token = bearer(request)
    if token is not None:
        # A token checked in the last moment is answered here, on the event loop.
        remembered = gate.remembered_identity(token)
        identity = remembered if remembered is not None \
            else await run_in_threadpool(gate.authenticate, token)
    else:
        secret = request.cookies.get(COOKIE)
        if not secret:
            raise Unauthenticated("sign in, or send 'Authorization: Bearer <token>'",
                                  code="unauthenticated")
        identity, session = await run_in_threadpool(gate.session_identity, secret)
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            check_csrf(secret, csrf or request.headers.get(CSRF_HEADER))
        request.state.session_secret = secret
        request.state.session = session
    request.state.identity = identity
    return identity


async def still_signed_in(gate: Gate, request: Request) -> bool:
    """Whether the credential this request came with still holds (an open event stream
    asks before each event: a session ended or a user disabled hears nothing more)."""
    secret = getattr(request.state, "session_secret", None)
    try:
        if secret is not None:
            await run_in_threadpool(lambda: gate.session_identity(secret, touch=False))
        else:
            await run_in_threadpool(gate.authenticate, bearer(request))
    except Unauthenticated:
        return False
    return True


def require_decider(identity: Identity) -> None:
    if identity.kind is IdentityKind.AGENT:
        raise Forbidden(f"{identity.name} is an agent identity and cannot decide",
                        code="agent_cannot_decide")


def require_admin(identity: Identity) -> None:
    if identity.kind is not IdentityKind.ADMIN:
        raise Forbidden(f"{identity.name} is not an admin", code="admin_required")


async def admin_of(request: Request) -> tuple[AppState, Identity]:
    """The app's state and the authenticated admin (``403 admin_required`` otherwise)."""
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    require_admin(identity)
    return state, identity
