"""``create_app``: the ASGI application ``signoff serve`` runs.

FastAPI rather than bare Starlette because the HTTP contract is a typed one:
the same pydantic models validate bodies and produce ``/openapi.json``, which
schemathesis then turns against the running server. Underneath it is
Starlette, which the inbox pages and the SSE stream use directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from signoff import __version__
from signoff.kernel.gate import Gate
from signoff.notify.channels import Channel
from signoff.notify.config import NotifyConfig
from signoff.notify.notifier import Notifier
from signoff.server import (
    api,
    bulk,
    history,
    inbox,
    insights,
    passkeys,
    problems,
    slack,
    suggestions,
)
from signoff.server.bodycap import BodyCap
from signoff.server.feed import ChangeFeed
from signoff.server.guard import Guard
from signoff.server.metrics import Metrics
from signoff.server.settings import ServerSettings
from signoff.server.state import AppState


def create_app(gate: Gate, settings: ServerSettings | None = None, *,
               feed_poll: float = 1.0, notify: NotifyConfig | None = None,
               channels: Sequence[Channel] = (), routes: Sequence[APIRouter] = ()) -> FastAPI:
    """The server for ``gate``. The change feed and the notifier (``notify``: the
    ``[notify]`` table; ``channels``: more of them) start with the app and stop with it.
    ``routes``: more of the API under ``/api/v1``, from the layers above (an adapter's)."""
    settings = settings or ServerSettings()
    notify = notify or NotifyConfig()
    # Files the server's configuration names are the gate's own: no agent writes them.
    gate.protect_files([notify.smtp.ca_file if notify.smtp else None],
                       "a file the server's configuration names ([notify] ca_file)")
    feed = ChangeFeed(gate.records, poll=feed_poll)
    metrics = Metrics(gate.records, lambda: feed.subscribers)
    state = AppState(gate=gate, feed=feed, settings=settings, metrics=metrics)
    notifier = Notifier(gate.notifier_tables(), notify, clock=gate.clock,
                        owner=gate.worker_id,
                        base_url=lambda: state.settings.base_url, channels=channels,
                        on_settled=metrics.settled)
    state.notifier = notifier
    gate.passkeys.inbox_url = lambda: state.settings.base_url  # where passkey approvals are
    feed.listeners.append(lambda _events: notifier.wake())

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        feed.start()
        notifier.start()
        try:
            yield
        finally:
            notifier.stop()
            feed.stop()

    app = FastAPI(title="signoff", version=__version__, lifespan=lifespan,
                  description="Human approval for AI agents' tool calls: propose, decide, run "
                  "exactly the approved call once. Errors are application/problem+json with a "
                  "stable `code`.", docs_url=None, redoc_url=None)
    app.state.signoff = state
    problems.install(app)
    api.include(app, routes)
    app.include_router(api.health)
    app.include_router(api.well_known)
    app.include_router(inbox.pages)
    app.include_router(bulk.bulk_pages)
    app.include_router(insights.pages)
    app.include_router(suggestions.pages)
    app.include_router(passkeys.pages)
    app.include_router(history.history)
    app.include_router(slack.router)
    app.add_middleware(BodyCap)  # inside the Guard: a bad Host is refused first
    app.add_middleware(Guard, settings=settings)
    _security(app)
    return app


def _security(app: FastAPI) -> None:
    schema = app.openapi()
    schema.setdefault("components", {})["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer",
                   "description": "a token from `signoff users add` or `signoff users rotate`"}}
    schema["security"] = [{"bearer": []}]
    for path, item in schema.get("paths", {}).items():
        if path in ("/healthz", "/metrics", "/.well-known/jwks.json"):
            for operation in item.values():
                operation["security"] = []
    app.openapi_schema = schema
