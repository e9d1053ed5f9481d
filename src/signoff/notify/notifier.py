"""The notifier: one thread per server that keeps the outbox moving.

It wakes when the change feed sees new audit events (from this server or any
other on the same database), when a retry or a timer falls due, and every
``poll`` seconds regardless; each time it schedules and fires timers
(``signoff.notify.timers``), fans out, then claims and sends due deliveries on
a small pool of threads until none is due. Sending never
happens inside a database transaction. ``tick()`` does one such pass on the
caller's thread — what tests drive, with a clock of their own.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx

from signoff.notify.channels import Attempt, Channel
from signoff.notify.config import NotifyConfig
from signoff.notify.mail import EmailChannel
from signoff.notify.outbox import Outbox
from signoff.notify.slack import SlackChannel
from signoff.notify.targets import Targets, host_of
from signoff.notify.timers import Timers
from signoff.notify.webhook import WebhookChannel
from signoff.notify.webhook_admin import endpoints
from signoff.store.base import Store
from signoff.store.deliveries import DELIVERED, Delivery
from signoff.store.outage import Streak

log = logging.getLogger("signoff.notify")
RELEASE_EVERY = 30.0  # seconds between looks for leases of dead notifiers on this host
SEAL_WAIT = 1.0  # seconds a pass waits for events committed before it to be sealed
# Seconds between the starts of two passes. Under load every commit wakes the notifier; a
# pass per commit costs each decision a seal, a timers' pass and a fan-out of its own,
# while one pass per PACE does the same work for all the commits of that moment.
PACE = 0.05
Settled = Callable[[Delivery, str, float], None]  # (delivery, new status, now)


class Notifier:
    def __init__(self, store: Store, config: NotifyConfig, *, base_url: Callable[[], str],
                 clock: Callable[[], float] = time.time, owner: str | None = None,
                 channels: Sequence[Channel] = (), poll: float = 1.0, workers: int = 8,
                 on_settled: Settled | None = None) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.poll = poll
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.outbox = Outbox(store, owner=self.owner, base_url=base_url, retry=config.retry,
                             clock=clock)
        self.client = httpx.Client(timeout=config.retry.timeout, follow_redirects=False)
        self.targets = Targets(allow_private=config.allow_private_targets,
                               own_names=lambda: [host_of(base_url())])
        self.extra = tuple(channels)
        self.timers = Timers(store, config.escalation, clock=clock)
        self.slack = None if config.slack is None else SlackChannel(
            config.slack, store, clock=clock, timeout=config.retry.timeout)
        self.mail = [EmailChannel(e, config.smtp, timeout=config.retry.timeout)
                     for e in config.email if config.smtp is not None]
        self.on_settled = on_settled
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="signoff-notify")
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_release = 0.0
        self._fanning = True  # whether the last pass had a channel to fan out to

    # ---- channels ------------------------------------------------------------------------

    def channels(self) -> list[Channel]:
        """The webhooks (the policy file's and the registered ones), Slack, the email
        lists, then the others."""
        chosen: dict[str, Channel] = {
            e.channel: WebhookChannel(e, self.client, self.targets)
            for e in endpoints(self.store, self.config)}
        if self.slack is not None:
            chosen[self.slack.channel] = self.slack
        for mailing in self.mail:
            chosen[mailing.channel] = mailing
        for channel in self.extra:
            chosen.setdefault(channel.channel, channel)
        return list(chosen.values())

    # ---- one pass ------------------------------------------------------------------------

    def tick(self) -> int:
        """Fan out, then send what is due until nothing is; how many attempts were made."""
        channels = {c.channel: c for c in self.channels()}
        self._fanning = bool(channels)
        if channels:
            # Notifications follow the sealed audit: what was committed before this pass is
            # fanned out by it (PostgreSQL seals after commit; a running transaction can hold
            # events back, which the next pass picks up). With no channel there is nothing
            # to fan out, and the timers are scheduled from what is sealed: the sealer's
            # pass wakes this one again (the change feed hears it), so a server that only
            # keeps timers leaves sealing to its sealer rather than racing it.
            self.store.seal(wait=SEAL_WAIT)
        now = time.monotonic()
        if now >= self._next_release:
            self._next_release = now + RELEASE_EVERY
            self.outbox.release_gone()
        self.timers.schedule()
        if self.timers.fire() and channels:  # reminders, escalations, expiries: fanned out
            self.store.seal(wait=SEAL_WAIT)
        self.outbox.fan_out(list(channels.values()))
        attempts = 0
        while not self._stop.is_set():
            claimed = self.outbox.claim(list(channels))
            if not claimed:
                return attempts
            work: list[tuple[Channel, list[Delivery]]] = []
            batches: dict[str, list[Delivery]] = {}
            for delivery in claimed:
                if channels[delivery.channel].batched:  # a digest: one message for them all
                    batches.setdefault(delivery.channel, []).append(delivery)
                else:
                    work.append((channels[delivery.channel], [delivery]))
            work += [(channels[name], group) for name, group in batches.items()]
            done = [pair for pairs in self._pool.map(lambda job: self._attempt(*job), work)
                    for pair in pairs]
            for (delivery, attempt), status in zip(done, self.outbox.settle_all(done),
                                                   strict=True):
                if status is not None and self.on_settled is not None:
                    self.on_settled(delivery, status, self.clock())
                if status is not None and status != DELIVERED:
                    log.warning("notify: %s %s attempt %d: %s", delivery.channel,
                                delivery.event_id, delivery.attempts, attempt.error)
            attempts += len(claimed)
        return attempts

    def _attempt(self, channel: Channel, deliveries: list[Delivery]
                 ) -> list[tuple[Delivery, Attempt]]:
        try:
            results = channel.send_batch(deliveries)
        except Exception as exc:  # a channel's bug is a failed attempt, not a dead notifier
            log.exception("notify: %s failed on %s", channel.channel, deliveries[0].id)
            results = [Attempt(ok=False, error=f"{type(exc).__name__}: {exc}"[:500])
                       for _ in deliveries]
        return list(zip(deliveries, results, strict=True))

    # ---- the thread ----------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="signoff-notifier", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.client.close()

    def _run(self) -> None:
        failures = Streak(log, "notify")
        while not self._stop.is_set():
            started = time.monotonic()
            self._wake.clear()
            try:
                self.tick()
                wait = self._until_due()
                failures.ok()
            except Exception as exc:  # the database went away: keep trying, never kill the server
                failures.failed(exc)  # logged once (signoff.store.outage)
                wait = self.poll
            self._wake.wait(wait)
            rest = PACE - (time.monotonic() - started)
            if rest > 0:  # woken at once: let the commits of this moment gather
                self._stop.wait(rest)

    def _until_due(self) -> float:
        # Deliveries wait only for a configured channel: with none, nothing claims them.
        deliveries = self.store.next_delivery_due() if self._fanning else None
        dues = [d for d in (deliveries, self.store.next_timer_due()) if d is not None]
        if not dues:
            return self.poll
        return max(0.0, min(self.poll, min(dues) - self.clock()))
