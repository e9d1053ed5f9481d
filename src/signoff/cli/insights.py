"""``signoff insights``: what the approval history says, as compact tables or JSON.

The figures are the gate's (``Gate.insights``: aggregated by the database), so the
command reads a store of a million requests in seconds; docs/insights.md says what each
one means.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from signoff.cli.common import common_args, emit, open_gate
from signoff.insights import TOP, TOP_MAX, Insights, duration, percent, read_top, read_window
from signoff.times import TIME_HELP, shown


def add_insights(commands: Any) -> None:
    parser = commands.add_parser(
        "insights", help="what the approval history says: asks per tool, rule, thread and "
        "day, answer rates, waits, repeats, unused rules, expiries",
        description="Figures of the approval requests created in a window (all of them "
        "by default), aggregated by the database.")
    common_args(parser)
    parser.add_argument("--since", metavar="WHEN",
                        help=f"only requests created at or after this time: {TIME_HELP}")
    parser.add_argument("--until", metavar="WHEN",
                        help=f"only requests created before this time: {TIME_HELP}")
    parser.add_argument("--top", metavar="N",
                        help=f"how many threads and repeated calls to rank ({TOP}; "
                        f"1–{TOP_MAX})")
    parser.set_defaults(handler=cmd_insights)
    from signoff.cli.suggest import add_suggest  # noqa: PLC0415

    add_suggest(parser.add_subparsers(title="insights commands", metavar="COMMAND"))


def cmd_insights(args: argparse.Namespace) -> int:
    since, until = read_window(args.since, args.until, now=time.time(),
                               names=("--since", "--until"))
    top = read_top(args.top, name="--top")
    found = open_gate(args).insights(since=since, until=until, top=top)
    emit(args, found.to_dict(), text(found))
    return 0


def text(found: Insights) -> str:
    """The figures as a few compact tables."""
    window = " to ".join(shown(at) for at in (found.since, found.until) if at is not None)
    out = [f"{found.asks} asks from {found.threads} threads"
           + (f" ({'from ' if found.until is None else ''}{window})" if window else "")]
    if not found.asks:
        return out[0]
    out += _table("status", ("asks",), [(c.key, c.asks) for c in found.statuses])
    out += _table("tool", ("asks",), [(c.key, c.asks) for c in found.tools])
    out += _table("rule", ("asks", "decided", "approve", "edit", "reject", "respond"),
                  [(r.rule, r.asks, r.decided, *(percent(r.rate(n)) for n in (
                      r.approved, r.edited, r.rejected, r.responded))) for r in found.rules])
    out += _table("day", ("asks",), [(d.day, d.asks) for d in found.days])
    out += _table("thread", ("asks", "days"),
                  [(t.thread, t.asks, len(t.days)) for t in found.top_threads])
    out += _table("risk", ("decided", "median", "p90"),
                  [(w.risk, w.decided, duration(w.median), duration(w.p90))
                   for w in found.waits])
    out += _table("repeated call", ("asks",),
                  [(f"{r.tool} {r.args_hash[:19]}…", r.asks) for r in found.repeated])
    out.append(f"\nexpired unanswered: {found.expired_unanswered}"
               + "".join(f"  {c.key} {c.asks}" for c in found.expired_by_tool))
    out.append("rules that never matched: " + (", ".join(found.never_matched) or "none"))
    return "\n".join(out)


def _table(first: str, heads: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    if not rows:
        return []
    width = max(len(first), *(len(str(row[0])) for row in rows))
    cells = [[str(v) for v in row[1:]] for row in rows]
    sizes = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
    line = [f"\n{first:<{width}}" + "".join(f"  {h:>{s}}" for h, s in zip(heads, sizes,
                                                                          strict=True))]
    for row, cell in zip(rows, cells, strict=True):
        line.append(f"{row[0]!s:<{width}}" + "".join(f"  {c:>{s}}" for c, s in zip(
            cell, sizes, strict=True)))
    return line
