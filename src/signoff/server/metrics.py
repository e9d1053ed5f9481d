"""``/metrics`` in the Prometheus text format: requests by status (read from the
database at scrape time, so every server reports the shared truth), decisions
and proposals counted here, decision latency (request created → the decision
that settled it), the agents waiting on this server right now, and
notifications: deliveries by channel and status (from the database), the
attempts this server made and how long an event took to reach its channel."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from signoff.model import RequestStatus
from signoff.store.deliveries import Delivery

DELIVERY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600)
LATENCY_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 86400)


class Counted(Protocol):
    """What ``/metrics`` reads at scrape time: the kernel's ``Records``."""

    def count_requests(self) -> dict[str, int]: ...
    def delivery_counts(self) -> dict[tuple[str, str], int]: ...


class _Requests(Collector):
    def __init__(self, store: Counted) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("signoff_requests", "Approval requests by status",
                                   labels=["status"])
        counts = self.store.count_requests()
        for status in RequestStatus:
            family.add_metric([status.value], counts.get(status.value, 0))
        yield family


class _Deliveries(Collector):
    def __init__(self, store: Counted) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("signoff_deliveries", "Notification deliveries in the "
                                   "log, by channel and status", labels=["channel", "status"])
        for (channel, status), count in sorted(self.store.delivery_counts().items()):
            family.add_metric([channel, status], count)
        yield family


class Metrics:
    def __init__(self, store: Counted, subscribers: Callable[[], int] = lambda: 0) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(_Requests(store))
        self.proposals = Counter("signoff_proposals", "Calls proposed over HTTP, by answer",
                                 ["status"], registry=self.registry)
        self.decisions = Counter("signoff_decisions", "Decisions taken on this server, by kind",
                                 ["kind"], registry=self.registry)
        self.latency = Histogram("signoff_decision_latency_seconds",
                                 "From request creation to the decision that settled it",
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        self.waiters = Gauge("signoff_waiters", "Agents long-polling a call on this server",
                             registry=self.registry)
        self.streams = Gauge("signoff_event_streams", "Open SSE streams on this server",
                             registry=self.registry)
        self.streams.set_function(subscribers)
        self.registry.register(_Deliveries(store))
        self.attempts = Counter("signoff_delivery_attempts", "Notification attempts made by "
                                "this server, by channel and what came of them",
                                ["channel", "outcome"], registry=self.registry)
        self.delivery_latency = Histogram(
            "signoff_delivery_latency_seconds", "From an event to its delivery on a channel",
            ["channel"], buckets=DELIVERY_BUCKETS, registry=self.registry)

    def settled(self, delivery: Delivery, status: str, now: float) -> None:
        """A notification attempt's outcome (``signoff.notify.notifier.Settled``)."""
        outcome = {"pending": "retry"}.get(status, status)
        self.attempts.labels(delivery.channel, outcome).inc()
        if status == "delivered":
            self.delivery_latency.labels(delivery.channel).observe(
                max(0.0, now - delivery.event_at))

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
