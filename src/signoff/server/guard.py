"""The front door, before any route runs: Host and Origin checks and security headers.

* ``Host`` must name this server (DNS rebinding: a hostile page whose name
  resolves to 127.0.0.1 still sends its own name as Host) — 400 ``bad_host``.
* A state-changing request (anything but GET/HEAD/OPTIONS) that carries an
  ``Origin`` must come from this server's own origin or an allowed one, and one
  marked ``Sec-Fetch-Site: cross-site`` is refused even without Origin —
  403 ``cross_origin``. No CORS headers are ever sent, so other origins cannot
  read answers either.
* Every answer carries a Content-Security-Policy with ``frame-ancestors
  'none'`` (no clickjacking of the Approve button), ``nosniff`` and
  ``Referrer-Policy: same-origin`` (a login link's code never leaks to another
  site in a Referer). Not ``no-referrer``: under it browsers send ``Origin: null``
  on the inbox's own form posts, which the Origin check must refuse.

A plain ASGI middleware, so SSE streams pass through untouched.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.server.problems import problem
from signoff.server.settings import ServerSettings

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


class Guard:
    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        self.hosts = settings.host_names()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", ())}
        refusal = self.refusal(scope["method"], headers)
        if refusal is not None:
            status, code, detail = refusal
            await problem(status, code, detail)(scope, receive, _secured(send))
            return
        await self.app(scope, receive, _secured(send))

    def refusal(self, method: str, headers: dict[str, str]) -> tuple[int, str, str] | None:
        host = headers.get("host", "")
        if _strip_port(host).lower() not in self.hosts:
            return 400, "bad_host", f"this server does not answer to Host {host!r}"
        if method in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/") not in self.origins(host):
            return 403, "cross_origin", f"requests from origin {origin!r} are not accepted"
        if headers.get("sec-fetch-site") == "cross-site":
            return 403, "cross_origin", "cross-site requests are not accepted"
        return None

    def origins(self, host: str) -> set[str]:
        own = {f"http://{host}", f"https://{host}"}
        if self.settings.public_url:
            scheme, rest = self.settings.public_url.split("://", 1)
            own.add(f"{scheme}://{rest.split('/', 1)[0]}")
        return own | set(self.settings.allowed_origins)


def _strip_port(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _secured(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers", [])}
            extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)
    return wrapped
