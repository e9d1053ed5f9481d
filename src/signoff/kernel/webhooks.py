"""Registered webhook endpoints and delivery replays, written with their audit events.

``signoff.notify.webhook_admin`` checks what an admin asked for (a name, a URL the server may
reach, filters) and makes the secret; the writes are here, each in one transaction with
its audit event (``webhook.added``, ``webhook.removed``, ``webhook.replayed``). The
secret never reaches the audit log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from signoff.audit import AuditKind, to_us
from signoff.errors import Conflict, NotFound
from signoff.store.base import Store
from signoff.store.deliveries import StoredEndpoint


class Webhooks:
    """The endpoints registered through the API or the CLI, and replays of deliveries."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def webhook_endpoints(self) -> list[StoredEndpoint]:
        return self.store.webhook_endpoints()

    def add_webhook(self, endpoint: StoredEndpoint, *, data: Mapping[str, Any],
                    actor: str | None, now: float) -> None:
        """Register ``endpoint`` (``Conflict(webhook_exists)`` if its name is taken); its
        channel starts at the audit head, so it hears every event after it."""
        # Sealed first: what was committed before this registration is under the head its
        # channel starts at (PostgreSQL numbers events when it seals them), so it is not told.
        self.store.seal()
        with self.store.transaction() as tx:
            if not tx.insert_endpoint(endpoint):
                raise Conflict(f"webhook {endpoint.name!r} exists", code="webhook_exists")
            tx.start_channel_cursor(f"webhook:{endpoint.name}")
            tx.append_audit(AuditKind.WEBHOOK_ADDED, at_us=to_us(now), request_id=None, actor=actor,
                            data=data)

    def remove_webhook(self, name: str, *, actor: str | None, now: float) -> None:
        """Remove a registered endpoint and its channel's cursor."""
        with self.store.transaction() as tx:
            if not tx.delete_endpoint(name):
                raise NotFound(f"no webhook {name!r}", code="webhook_not_found")
            tx.drop_channel_cursor(f"webhook:{name}")
            tx.append_audit(AuditKind.WEBHOOK_REMOVED, at_us=to_us(now), request_id=None,
                            actor=actor, data={"name": name})

    def replay_deliveries(self, *, actor: str | None, now: float, ids: Sequence[str],
                          channel: str | None, status: str | None,
                          after_index: int | None) -> list[str]:
        """Make the chosen deliveries pending and due now; the ids chosen."""
        with self.store.transaction() as tx:
            chosen = tx.replay_deliveries(now=now, ids=ids, channel=channel, status=status,
                                          after_index=after_index)
            if ids and len(chosen) < len(set(ids)):
                missing = sorted(set(ids) - set(chosen))
                raise NotFound(f"no delivery to replay: {missing[0]!r} (unknown, or pending "
                               "already)", code="delivery_not_found")
            if chosen:
                tx.append_audit(AuditKind.WEBHOOK_REPLAYED, at_us=to_us(now), request_id=None,
                                actor=actor, data={"deliveries": len(chosen),
                                                   "first": chosen[0], "channel": channel,
                                                   "status": status})
        return chosen
