"""The JSON API under ``/api/v1`` (docs/server.md): the gate over HTTP.

``calls`` is the agent's half (propose, wait, claim, report, check),
``approvals`` the approver's (requests, decisions, thread modes), ``insights`` the
history's figures (for approvers and admins), ``observability``
the audit log and the event stream (and ``health``), ``users`` and ``webhooks`` the
admins' (the user lifecycle; notification endpoints and deliveries), ``suggestions``
the admins' rule suggestions (listed, and written into the policy file), ``receipts`` the
signed receipts of approvals (and ``well_known``: the public keys, outside the prefix).
Every handler does its database work in the thread pool.
``health`` holds ``/healthz`` and ``/metrics``, outside the prefix.

The app includes each part itself (``include``), one level deep: FastAPI matches a
request against every level of included routers twice over (once to find it, once to
handle it), and on a decision that cost more of the event loop than the endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, FastAPI

from signoff.server import (
    approvals,
    calls,
    insights,
    observability,
    passkeys,
    receipts,
    suggestions,
    users,
    webhooks,
)
from signoff.server.bodies import ERRORS

PREFIX = "/api/v1"
PARTS: tuple[APIRouter, ...] = (approvals.router, calls.router, observability.router, users.router,
                                webhooks.router, passkeys.router, receipts.router,
                                insights.router, suggestions.router)
health = observability.health
well_known = receipts.well_known  # /.well-known/jwks.json, public


def include(app: FastAPI, more: Sequence[APIRouter] = ()) -> None:
    """The API's parts under ``/api/v1``, approvals (the hottest) first, then ``more``: the
    routes of the layers above the server (an adapter's HTTP face, as the coding agents'
    hook route ``signoff serve`` adds)."""
    for part in (*PARTS, *more):
        app.include_router(part, prefix=PREFIX, responses=ERRORS)


__all__ = ["PREFIX", "health", "include", "well_known"]
