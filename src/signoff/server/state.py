"""What every handler needs, hung on ``app.state``: the gate, the change feed, the
settings and the metrics."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import HTTPConnection

from signoff.kernel.gate import Gate
from signoff.server.feed import ChangeFeed
from signoff.server.metrics import Metrics
from signoff.server.settings import ServerSettings


@dataclass(slots=True)
class AppState:
    gate: Gate
    feed: ChangeFeed
    settings: ServerSettings
    metrics: Metrics


def state_of(conn: HTTPConnection) -> AppState:
    state: AppState = conn.app.state.signoff
    return state
