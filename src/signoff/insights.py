"""What the approval history says, as figures (``Gate.insights``, ``signoff insights``).

Plain frozen values, computed by the store's SQL aggregation (``signoff.store.insights``)
and shown by the CLI, the inbox and ``GET /api/v1/insights``: kept in the vocabulary so
that every one of them reads the window the same way (``read_window``, ``read_top``) and
says the same figures in the same words (``percent``, ``duration``; docs/insights.md).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import asdict, dataclass
from typing import Any

from signoff.errors import InvalidInput
from signoff.times import parse_time

DAY = 86_400
TOP = 10  # threads and repeated calls ranked when nobody says (CLI, API, inbox)
TOP_MAX = 1000

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


def read_window(since: str | None, until: str | None, *, now: float,
                names: tuple[str, str] = ("since", "until")) -> tuple[float | None, float | None]:
    """The window's bounds as given (``None``: unbounded), in any of the time forms every
    surface takes (``signoff.times``: epoch seconds, ISO 8601, an age back from ``now``);
    a text that is none is ``invalid_time``, naming ``names``' field. Whether the window
    is empty is the gate's to say (``invalid_window``)."""
    return (None if since is None else parse_time(names[0], since, now=now),
            None if until is None else parse_time(names[1], until, now=now))


_DIGITS = re.compile(r"[0-9]{1,9}")


def read_top(text: str | None, *, name: str = "top") -> int:
    """How many threads and repeated calls to rank: ``TOP`` when not given, else the
    whole number given (``invalid_limit`` when it is none; whether it is within
    1–``TOP_MAX`` is the gate's to say, with the same code)."""
    if text is None:
        return TOP
    if not _DIGITS.fullmatch(text.strip()):
        shown = repr(text if len(text) <= 20 else text[:20] + "…")
        raise InvalidInput(f"{name} {shown} is not a whole number from 1 to {TOP_MAX}",
                           code="invalid_limit", field=name)
    return int(text.strip())


def percent(rate: float | None) -> str:
    """A rate as people read it: ``50%``; ``-`` when nothing was decided."""
    return "-" if rate is None else f"{rate * 100:.0f}%"


def duration(seconds: float) -> str:
    """A wait as people read it: ``30s``, ``12m``, ``2.5h``."""
    if seconds < 120:
        return f"{seconds:.0f}s"
    return f"{seconds / 60:.0f}m" if seconds < 7200 else f"{seconds / 3600:.1f}h"
