"""The JSON API under ``/api/v1`` (DESIGN §6): the gate over HTTP.

``calls`` is the agent's half (propose, wait, claim, report, check),
``approvals`` the approver's (requests, decisions, thread modes), ``records``
the audit log and the event stream, ``users`` and ``webhooks`` the admins' (the user
lifecycle; notification endpoints and deliveries). Every handler does its
database work in the thread pool.
``health`` holds ``/healthz`` and ``/metrics``, outside the prefix.
"""

from __future__ import annotations

from fastapi import APIRouter

from signoff.server import approvals, calls, records, users, webhooks
from signoff.server.bodies import ERRORS

router = APIRouter(prefix="/api/v1", responses=ERRORS)
router.include_router(calls.router)
router.include_router(approvals.router)
router.include_router(records.router)
router.include_router(users.router)
router.include_router(webhooks.router)
health = records.health

__all__ = ["health", "router"]
