"""The outbox: audit events fanned out into deliveries, deliveries claimed, attempts settled.

No network here — only the database — so each step is one short transaction
and no request transaction ever waits on a receiver:

* **fan-out** holds the cursors of the channels it serves (in name order, so two
  servers can't deadlock), reads the audit events after the lowest, and writes
  one delivery per (channel, event) the channel wants, then moves each cursor
  — all in one commit. A crash before the commit leaves the cursors where they
  were, so nothing is lost; a second server waits on the cursor rows and then
  finds the events already fanned out, so nothing is doubled.
* **claim** leases due deliveries (a request's events in order per channel);
  the lease is committed before anything is sent.
* **settle** records how the attempt went, only if that attempt still holds its
  lease: delivered, retried later (exponential backoff with jitter), or dead
  after ``max_attempts``.

At least once, then: an attempt whose server dies before it settles is sent
again with the same ``webhook-id`` — when its lease runs out, or at once when
a server on the same host sees that the process holding it is gone.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import replace

from signoff.kernel.recovery import waiter_gone
from signoff.model import ApprovalRequest
from signoff.notify.channels import Attempt, Channel
from signoff.notify.config import Retry
from signoff.notify.events import notification_type, payload
from signoff.store.base import Store
from signoff.store.deliveries import DEAD, DELIVERED, PENDING, Delivery, delivery_id

FANOUT_BATCH = 500
LEASE_MARGIN = 5.0  # seconds a claim outlives its attempt's timeout


def _wants(channel: Channel, type_: str, request: ApprovalRequest, data: str) -> bool:
    """An escalation goes to the channels its rule names (and only those), whatever they
    filter; every other event to the channels whose filters want it."""
    if type_ == "request.escalated":
        named = json.loads(data).get("channels", [])
        return isinstance(named, list) and channel.channel in named
    return channel.wants(type_, request)


class Outbox:
    def __init__(self, store: Store, *, owner: str, base_url: Callable[[], str], retry: Retry,
                 clock: Callable[[], float], jitter: Callable[[], float] = random.random) -> None:
        self.store = store
        self.owner = owner
        self.base_url = base_url
        self.retry = retry
        self.clock = clock
        self.jitter = jitter
        # (channels, audit index) fanned out up to last time: a hint that skips idle passes
        self._seen: tuple[tuple[str, ...], int] = ((), -1)

    def fan_out(self, channels: Sequence[Channel]) -> int:
        """Deliveries for every event not yet fanned out to ``channels``; how many."""
        made = 0
        ordered = sorted(channels, key=lambda c: c.channel)
        names = tuple(c.channel for c in ordered)
        if not ordered or (names == self._seen[0] and
                           self.store.audit_head()[0] <= self._seen[1]):
            return 0  # nothing new for these channels: no write transaction
        while ordered:
            with self.store.transaction() as tx:
                cursors = {c.channel: tx.channel_cursor(c.channel) for c in ordered}
                events = tx.audit_after(min(cursors.values()), FANOUT_BATCH)
                if not events:
                    self._seen = (names, min(cursors.values()))
                    return made
                now = self.clock()
                base_url = self.base_url()
                requests: dict[str, ApprovalRequest | None] = {}
                for event in events:
                    type_ = notification_type(event)
                    if type_ is None or event.request_id is None:
                        continue
                    if event.request_id not in requests:
                        requests[event.request_id] = tx.get_request(event.request_id)
                    request = requests[event.request_id]
                    if request is None:
                        continue
                    wanting = [c for c in ordered if event.index > cursors[c.channel]
                               and _wants(c, type_, request, event.data)]
                    if not wanting:
                        continue
                    decisions = tx.decisions(request.id) if type_ != "request.created" else []
                    body = payload(event, type_, request, decisions, base_url=base_url)
                    for channel in wanting:
                        tx.insert_delivery(Delivery(
                            id=delivery_id(channel.channel, event.index),
                            channel=channel.channel, event_index=event.index,
                            event_type=type_, request_key=request.id, payload=body,
                            next_at=channel.due_at(now), event_at=event.at_us / 1_000_000,
                            created_at=now))
                        made += 1
                last = events[-1].index
                for channel in ordered:
                    if cursors[channel.channel] < last:
                        tx.set_channel_cursor(channel.channel, last)
                self._seen = (names, last)
            if len(events) < FANOUT_BATCH:
                return made
        return made

    def claim(self, channels: Sequence[str], *, limit: int = 50) -> list[Delivery]:
        """Lease up to ``limit`` due deliveries of ``channels`` to this owner."""
        if not channels:
            return []
        now = self.clock()
        until = now + self.retry.timeout + LEASE_MARGIN
        with self.store.transaction() as tx:
            due = tx.due_deliveries(channels, now=now, limit=limit)
            return [replace(d, attempts=d.attempts + 1, lease_owner=self.owner,
                            lease_until=until)
                    for d in due if tx.lease_delivery(d, owner=self.owner, until=until)]

    def release_gone(self) -> int:
        """Free the leases of this host's notifiers that died (a server SIGKILLed
        mid-delivery and started again): their deliveries are due at once, not when the
        lease runs out. Another host's leases are left to run out."""
        with self.store.transaction() as tx:
            return sum(tx.release_leases(owner) for owner in tx.lease_owners()
                       if owner != self.owner and waiter_gone(owner, self.owner))

    def settle(self, delivery: Delivery, attempt: Attempt) -> str | None:
        """Record ``attempt``; the delivery's new status, or ``None`` if the lease was lost
        (the attempt overran it and another claim owns the delivery now)."""
        return self.settle_all([(delivery, attempt)])[0]

    def settle_all(self, results: Sequence[tuple[Delivery, Attempt]]) -> list[str | None]:
        """``settle`` for a claim's attempts at once: one commit for them all."""
        now = self.clock()
        out: list[str | None] = []
        with self.store.transaction() as tx:
            for delivery, attempt in results:
                if attempt.ok:
                    status, next_at = DELIVERED, now
                elif attempt.final or delivery.attempts >= self.retry.max_attempts:
                    status, next_at = DEAD, now
                else:
                    status = PENDING
                    next_at = now + self.retry.delay(delivery.attempts, self.jitter())
                settled = tx.settle_delivery(delivery.id, owner=self.owner,
                                             attempts=delivery.attempts, status=status,
                                             next_at=next_at, at=now,
                                             last_status=attempt.status,
                                             last_error=attempt.error)
                out.append(status if settled else None)
        return out
