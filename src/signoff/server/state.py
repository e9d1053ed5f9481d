"""What every handler needs, hung on ``app.state``: the gate, the change feed, the
settings, the metrics and the notifier."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection

from signoff.kernel.gate import Gate
from signoff.server.feed import ChangeFeed
from signoff.server.metrics import Metrics
from signoff.server.settings import ServerSettings

if TYPE_CHECKING:
    from signoff.notify.notifier import Notifier


@dataclass(slots=True)
class AppState:
    gate: Gate
    feed: ChangeFeed
    settings: ServerSettings
    metrics: Metrics
    notifier: Notifier | None = field(default=None)


def state_of(conn: HTTPConnection) -> AppState:
    state: AppState = conn.app.state.signoff
    return state
