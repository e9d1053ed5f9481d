"""The values the store contract speaks in, beside ``signoff.model``'s: what a write carries
(``Event``), what a read hands back (``Approvals``, ``ThreadMemory``, ``Delivery``,
``StoredEndpoint``, ``Backup``).

Plain data, no database: the contract (``signoff.store.base``,
``signoff.store.capabilities``) and every backend import them from here, so the
contract depends on no backend's module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from signoff.audit import AuditKind
from signoff.identity import Identity
from signoff.model import Grant

# An audit event as a write carries it: ``(kind, at_us, actor, data)``.
Event = tuple[AuditKind, int, str | None, Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Approvals:
    """Who approved a request's hash to run, each as stored then (``None``: no such user),
    read with the request and without holding it; ``stamp`` is that reading as the
    database writes it, so that a claim sending it back is refused inside the database
    when any of it changed since (``Tx.claim_request``)."""

    of: list[tuple[str, Identity | None]]
    stamp: str


@dataclass(frozen=True, slots=True)
class ThreadMemory:
    """What proposing a call needs to know about its thread (``Store.thread_memory``)."""

    mode: str | None  # the review mode stored for the thread
    rejected: frozenset[str]  # tools with a remembered rejection in it
    grants: tuple[tuple[float, Grant], ...]  # (created_at, grant), oldest first
    # (request id, run id) of each request pending on the thread when this was read:
    # new requests do not drop what is remembered, so only a fresh read
    # (``thread_memory(…, fresh=True)``, as a run's start does) may be trusted with it.
    pending: tuple[tuple[str, str | None], ...] = ()
    mode_by: str | None = None  # who set the stored mode (None: trusted code, or no mode)
    mode_at: float | None = None  # when it was set
    mode_run: str | None = None  # the run that was waiting on the thread when it was set


# ---- notifications: one event for one channel, and the webhook endpoints ---------------------

PENDING, DELIVERED, DEAD = "pending", "delivered", "dead"


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    id: str  # "<channel>/<event id>"
    channel: str  # "webhook:<name>", "slack", "email:<name>"
    event_index: int
    event_type: str
    request_key: str  # the request's id ('' for none): the unit of ordering
    payload: str  # JSON text, as sent
    status: str = PENDING
    attempts: int = 0
    next_at: float
    lease_until: float | None = None
    lease_owner: str | None = None
    event_at: float
    created_at: float
    delivered_at: float | None = None
    last_status: int | None = None
    last_error: str | None = None

    @property
    def event_id(self) -> str:
        """The event's id, the same on every channel and every attempt: the idempotency key
        (Standard Webhooks' ``webhook-id``)."""
        return event_id(self.event_index)

    def to_dict(self, *, payload: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "event_id": self.event_id, "channel": self.channel,
            "event_index": self.event_index,
            "type": self.event_type, "request_id": self.request_key or None,
            "status": self.status, "attempts": self.attempts, "next_at": self.next_at,
            "event_at": self.event_at, "created_at": self.created_at,
            "delivered_at": self.delivered_at, "last_status": self.last_status,
            "last_error": self.last_error}
        if payload:
            out["payload"] = json.loads(self.payload)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredEndpoint:
    """A webhook endpoint an admin registered over the API or the CLI."""

    name: str
    url: str
    secret: str
    filters: dict[str, Any]
    created_at: float
    created_by: str | None


def event_id(index: int) -> str:
    return f"evt_{index}"


def delivery_id(channel: str, index: int) -> str:
    return f"{channel}/{event_id(index)}"


# ---- backups ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Backup:
    path: str
    bytes: int
    audit_events: int
    audit_head: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.bytes, "audit_events": self.audit_events,
                "audit_head": self.audit_head}


@dataclass(frozen=True, slots=True, kw_only=True)
class Passkey:
    """An approver's WebAuthn credential as registered: ``id`` and ``public_key`` (COSE) are
    base64url, ``rp_id`` and ``origin`` what it was made for (``signoff.kernel.passkeys``)."""

    id: str
    user: str
    public_key: str
    sign_count: int
    name: str
    rp_id: str
    origin: str
    created_at: float
    last_used_at: float | None = None
    removed_at: float | None = None  # removed: it signs nothing more, and no approval runs

    def to_dict(self) -> dict[str, Any]:
        """What the settings page, the API and ``signoff users passkeys`` show (the key
        itself is no secret, but nobody needs to read it)."""
        return {"id": self.id, "user": self.user, "name": self.name,
                "sign_count": self.sign_count, "rp_id": self.rp_id, "origin": self.origin,
                "created_at": self.created_at, "last_used_at": self.last_used_at}
