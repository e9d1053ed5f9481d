"""``/metrics`` in the Prometheus text format: requests by status (read from the
database at scrape time, so every server reports the shared truth), decisions
and proposals counted here, decision latency (request created → the decision
that settled it) and the agents waiting on this server right now."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from signoff.model import RequestStatus
from signoff.store.base import Store

LATENCY_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 86400)


class _Requests(Collector):
    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("signoff_requests", "Approval requests by status",
                                   labels=["status"])
        counts = self.store.count_requests()
        for status in RequestStatus:
            family.add_metric([status.value], counts.get(status.value, 0))
        yield family


class Metrics:
    def __init__(self, store: Store, subscribers: Callable[[], int] = lambda: 0) -> None:
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

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
