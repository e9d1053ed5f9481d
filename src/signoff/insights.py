"""What the approval history says, as figures (``Gate.insights``, ``signoff insights``).

Plain frozen values, computed by the store's SQL aggregation (``signoff.store.insights``)
and shown by the CLI, the inbox and ``GET /api/v1/insights``: kept in the vocabulary so
that every one of them reads the same figures in the same words (docs/insights.md).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any

DAY = 86_400

# An ask no rule made is counted under the step that asked, in parentheses: ``(gated)``,
# ``(unknown_tool)``, ``(shell)``… (a rule id never starts with one).
NO_RULE = "("


@dataclass(frozen=True, slots=True)
class Count:
    """How many asks one key (a tool, a thread, a status) had."""

    key: str
    asks: int


@dataclass(frozen=True, slots=True)
class Day:
    """One UTC day: its asks, and the asks per tool."""

    day: str  # 2026-03-01
    asks: int
    tools: tuple[Count, ...]


@dataclass(frozen=True, slots=True)
class Thread:
    """One of the threads that asked most: its asks, and its asks per UTC day."""

    thread: str
    asks: int
    days: tuple[Count, ...]


@dataclass(frozen=True, slots=True)
class RuleRates:
    """The asks one rule made and what humans answered them. ``decided`` counts the asks a
    human decided (approve, edit, reject, respond); the rates are shares of it."""

    rule: str
    asks: int
    decided: int
    approved: int
    edited: int
    rejected: int
    responded: int

    def rate(self, count: int) -> float | None:
        return None if not self.decided else count / self.decided


@dataclass(frozen=True, slots=True)
class Wait:
    """Seconds from an ask to the decision that settled it, for one risk (nearest rank)."""

    risk: str
    decided: int
    median: float
    p90: float


@dataclass(frozen=True, slots=True)
class Repeat:
    """The same call (tool and arguments hash) asked more than once."""

    tool: str
    args_hash: str
    asks: int


@dataclass(frozen=True, slots=True)
class Insights:
    """The figures of the requests created in ``[since, until)`` (``None``: unbounded)."""

    since: float | None
    until: float | None
    asks: int
    threads: int
    statuses: tuple[Count, ...]
    tools: tuple[Count, ...]
    rules: tuple[RuleRates, ...]
    top_threads: tuple[Thread, ...]
    days: tuple[Day, ...]
    waits: tuple[Wait, ...]
    repeated: tuple[Repeat, ...]
    never_matched: tuple[str, ...]
    expired_unanswered: int
    expired_by_tool: tuple[Count, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (``--json``, ``GET /api/v1/insights``): the fields, with each
        rule's rates beside its counts."""
        data = asdict(self)
        data["rules"] = [{**asdict(r), "approve_rate": r.rate(r.approved),
                          "edit_rate": r.rate(r.edited), "reject_rate": r.rate(r.rejected),
                          "respond_rate": r.rate(r.responded)} for r in self.rules]
        return data


def day_of(number: int) -> str:
    """The UTC date of day ``number`` since the epoch."""
    return (dt.date(1970, 1, 1) + dt.timedelta(days=number)).isoformat()
