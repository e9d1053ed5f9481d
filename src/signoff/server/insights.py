"""What the approval history says, over HTTP and in the inbox (docs/insights.md).

``GET /api/v1/insights`` answers ``Insights.to_dict()``: what ``signoff insights --json``
prints. ``/inbox/insights`` shows the same figures as charts drawn on the server
(``signoff.server.charts``: inline SVG, no script) and as tables, with a form for the
window. Both read ``since``, ``until`` and ``top`` as the CLI does
(``signoff.insights.read_window`` and ``read_top``: the same time forms and the same
codes, ``invalid_time``, ``invalid_window``, ``invalid_limit``); a bad value is a 422, a
problem from the API and the page with the error from the inbox. The figures span every
requester's calls: approvers and admins read them, an agent's token is refused (``403
approver_required``), as for the audit log.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from signoff.errors import InvalidInput
from signoff.insights import (
    TOP,
    TOP_MAX,
    Count,
    Insights,
    RuleRates,
    duration,
    percent,
    read_top,
    read_window,
)
from signoff.kernel.gate import Gate
from signoff.kernel.visibility import require_approver
from signoff.server import schemas
from signoff.server.auth import authenticate
from signoff.server.charts import (
    OTHER,
    PALETTE,
    Bar,
    Series,
    clip,
    columns,
    hbars,
    spark,
    summary_of,
)
from signoff.server.inbox import render, signed_in
from signoff.server.state import state_of
from signoff.times import TIME_HELP, shown

router = APIRouter()  # under /api/v1
pages = APIRouter(include_in_schema=False)

COLUMNS = 120  # at most this many bars of days: a longer span is drawn in buckets of days
TOOL_COLOURS = len(PALETTE) - 1  # tools with a colour of their own; the rest are "other"
CHART_ROWS = 20  # rows a horizontal chart draws; its table lists them all
FIELD_MAX = 64  # characters of a window's field the form shows again
ANSWERS = (Series("approved", "#2e7d32"), Series("edited", "#0b5cad"),
           Series("rejected", "#c62828"), Series("responded", "#7b1fa2"),
           Series("not decided", "#c9ced4"))
WAITS = (Series("median", "#0b5cad"), Series("p90", "#e69f00"))


def figures(gate: Gate, since: str | None, until: str | None, top: str | None) -> Insights:
    """The gate's figures for the window as given (texts, as a query string has them)."""
    start, end = read_window(since, until, now=gate.clock())
    return gate.insights(since=start, until=end, top=read_top(top))


@router.get("/insights", response_model=schemas.Insights,
            summary="What the approval history says, as figures")
async def get_insights(request: Request, *,
                       since: Annotated[str | None, Query(
                           description=f"requests created at or after: {TIME_HELP}")] = None,
                       until: Annotated[str | None, Query(
                           description=f"requests created before: {TIME_HELP}")] = None,
                       top: Annotated[str | None, Query(
                           description=f"how many threads and repeated calls to rank "
                           f"({TOP}; 1–{TOP_MAX})",
                           json_schema_extra={"pattern": "^[0-9]+$"})] = None) -> Any:
    """``Insights.to_dict()`` (docs/insights.md), the shape of ``signoff insights
    --json``; for approvers and admins."""
    state = state_of(request)
    require_approver(await authenticate(state.gate, request), "insights")
    found = await run_in_threadpool(figures, state.gate, since, until, top)
    return found.to_dict()


@pages.get("/inbox/insights")
async def insights_page(request: Request, *, since: str | None = None,
                        until: str | None = None, top: str | None = None) -> Response:
    """The figures as charts and tables; an empty field of the form is not given."""
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    given = {"since": (since or "").strip(), "until": (until or "").strip(),
             "top": (top or "").strip()}
    # What the form shows again: visible (a NUL or a hidden character as a marker), cut.
    form = {name: clip(value, FIELD_MAX) for name, value in given.items()}
    state = state_of(request)
    try:  # the figures and their charts, off the event loop
        view = await run_in_threadpool(lambda: page_view(figures(
            state.gate, given["since"] or None, given["until"] or None,
            given["top"] or None)))
    except InvalidInput as exc:  # anything else is a problem, as on every page
        return render(request, "insights.html", status=exc.http_status, form=form,
                      view=None, top_max=TOP_MAX, time_help=TIME_HELP,
                      error={"code": exc.code, "message": exc.message})
    return render(request, "insights.html", form=form, view=view, top_max=TOP_MAX,
                  time_help=TIME_HELP)


# ---- the page's figures: charts, and the same numbers as table rows ----------------------


def day_axis(days: Sequence[str], most: int = COLUMNS) -> list[list[str]]:
    """Every UTC day from the first of ``days`` to the last (those without asks too), in
    buckets of consecutive days, as few days to a bucket as keep them ``most`` or fewer."""
    if not days:
        return []
    first, last = dt.date.fromisoformat(min(days)), dt.date.fromisoformat(max(days))
    span = (last - first).days + 1
    size = math.ceil(span / most)
    return [[(first + dt.timedelta(days=d)).isoformat()
             for d in range(start, min(span, start + size))] for start in range(0, span, size)]


def _bucket_label(bucket: Sequence[str]) -> str:
    return bucket[0] if len(bucket) == 1 else f"{bucket[0]} to {bucket[-1]}"


def _counts(items: Sequence[Count]) -> str:
    return ", ".join(f"{c.key} {c.asks}" for c in items)


def tool_series(found: Insights) -> tuple[list[Series], dict[str, int]]:
    """A colour for each of the tools that asked most, "other" for the rest; and the
    series index of every tool."""
    named = [c.key for c in found.tools[:TOOL_COLOURS]]
    rest = len(found.tools) > TOOL_COLOURS
    if len(found.tools) == TOOL_COLOURS + 1:  # one more tool: its own colour, not "other"
        named, rest = [c.key for c in found.tools], False
    series = [Series(name, PALETTE[i]) for i, name in enumerate(named)]
    if rest:
        series.append(Series(f"{len(found.tools) - len(named)} other tools", OTHER))
    index = {c.key: named.index(c.key) if c.key in named else len(named) for c in found.tools}
    return series, index


def days_chart(found: Insights) -> dict[str, Any] | None:
    buckets = day_axis([d.day for d in found.days])
    if not buckets:
        return None
    series, index = tool_series(found)
    per_day = {d.day: d for d in found.days}
    bars: list[Bar] = []
    for bucket in buckets:
        values = [0.0] * len(series)
        for day in bucket:
            for count in per_day[day].tools if day in per_day else ():
                values[index[count.key]] += count.asks
        parts = ", ".join(f"{one.name} {value:.0f}"
                          for one, value in zip(series, values, strict=True) if value)
        bars.append(Bar(bucket[0], tuple(values), extra={"data-day": bucket[0]},
                        detail=f"{_bucket_label(bucket)}: {sum(values):.0f} asks"
                        + (f" ({parts})" if parts else "")))
    size = len(buckets[0])
    title = "Asks per day" if size == 1 else f"Asks per {size} days"
    peak = max(bars, key=lambda b: sum(b.values))
    summary = (f"{title} from {buckets[0][0]} to {buckets[-1][-1]}: {found.asks} asks in all, "
               f"the most ({sum(peak.values):.0f}) on "
               f"{_bucket_label(buckets[bars.index(peak)])}; by tool: {_counts(found.tools)}")
    return {"title": title, "svg": columns(bars, series, summary=summary), "buckets": buckets}


def _rows_chart(bars: list[Bar], series: Sequence[Series], *, title: str,
                items: list[str], **options: Any) -> dict[str, Any]:
    """A horizontal chart of at most ``CHART_ROWS`` bars; how many more the table has."""
    return {"svg": hbars(bars[:CHART_ROWS], series, summary=summary_of(title, items),
                         **options),
            "more": max(0, len(bars) - CHART_ROWS)}


def page_view(found: Insights) -> dict[str, Any]:
    """Everything ``insights.html`` shows of ``found``."""
    window = " to ".join(shown(at) for at in (found.since, found.until) if at is not None)
    if found.since is not None and found.until is None:
        window = "from " + window
    elif found.since is None and found.until is not None:
        window = "until " + window
    days = days_chart(found)
    view: dict[str, Any] = {
        "found": found, "window": window or "the whole history", "days": days,
        "day_rows": [{"day": d.day, "asks": d.asks, "tools": _counts(d.tools)}
                     for d in found.days]}
    one = [Series("asks", PALETTE[0])]
    view["tools"] = _rows_chart(
        [Bar(c.key, (float(c.asks),)) for c in found.tools], one, title="Asks per tool",
        items=[f"{c.key} {c.asks}" for c in found.tools]) if found.tools else None
    view["tool_rows"] = [{"tool": c.key, "asks": c.asks,
                          "share": percent(c.asks / found.asks if found.asks else None)}
                         for c in found.tools]
    view["rule_rows"] = [{"rule": r.rule, "asks": r.asks, "decided": r.decided,
                          "rates": [percent(r.rate(n)) for n in (
                              r.approved, r.edited, r.rejected, r.responded)]}
                         for r in found.rules]
    view["rules"] = _rows_chart(
        [Bar(r.rule, (float(r.approved), float(r.edited), float(r.rejected),
                      float(r.responded), float(r.asks - r.decided)),
             note=f"{r.asks} ask{'s' if r.asks != 1 else ''}", detail=rule_said(r))
         for r in found.rules], ANSWERS, title="Asks per rule and how they were answered",
        items=[rule_said(r) for r in found.rules]) if found.rules else None
    view["wait_rows"] = [{"risk": w.risk, "decided": w.decided, "median": duration(w.median),
                          "p90": duration(w.p90)} for w in found.waits]
    view["waits"] = _rows_chart(
        [Bar(w.risk, (w.median, w.p90)) for w in found.waits], WAITS,
        title="Time to decision per risk",
        items=[f"{w.risk}: median {duration(w.median)}, p90 {duration(w.p90)}, of "
               f"{w.decided} decided" for w in found.waits],
        stacked=False, fmt=duration) if found.waits else None
    buckets = days["buckets"] if days else []
    view["thread_rows"] = [_thread_row(t.thread, t.asks, t.days, buckets)
                           for t in found.top_threads]
    view["repeated_rows"] = [{"tool": r.tool, "args_hash": r.args_hash, "asks": r.asks}
                             for r in found.repeated]
    view["repeated"] = _rows_chart(
        [Bar(f"{r.tool} {r.args_hash.removeprefix('sha256:')[:8]}", (float(r.asks),))
         for r in found.repeated], one, title="Calls asked more than once",
        items=[f"{r.tool} with arguments {r.args_hash}: {r.asks} times"
               for r in found.repeated]) if found.repeated else None
    expired = [Series("expired unanswered", PALETTE[3])]
    view["expired"] = _rows_chart(
        [Bar(c.key, (float(c.asks),)) for c in found.expired_by_tool], expired,
        title=f"Expired unanswered per tool ({found.expired_unanswered} in all)",
        items=[f"{c.key} {c.asks}" for c in found.expired_by_tool]) \
        if found.expired_by_tool else None
    return view


def rule_said(rule: RuleRates) -> str:
    """A rule's figures in words (its bar's tooltip, the chart's summary)."""
    return (f"{rule.rule}: {rule.asks} asks, {rule.decided} decided, approve "
            f"{percent(rule.rate(rule.approved))}, edit {percent(rule.rate(rule.edited))}, "
            f"reject {percent(rule.rate(rule.rejected))}, respond "
            f"{percent(rule.rate(rule.responded))}")


def _thread_row(thread: str, asks: int, days: Sequence[Count],
                buckets: Sequence[Sequence[str]]) -> dict[str, Any]:
    per_day = {c.key: c.asks for c in days}
    values = [(_bucket_label(b), float(sum(per_day.get(d, 0) for d in b))) for b in buckets]
    summary = f"Thread {thread}: {asks} asks on {len(days)} day{'s' if len(days) != 1 else ''}"
    summary = summary_of(summary + ", per day", [f"{c.key} {c.asks}" for c in days])
    return {"thread": thread, "asks": asks, "active": len(days), "per_day": _counts(days),
            "spark": spark(values, summary=summary) if values else None}
