"""The approval history aggregated in SQL (``Store.insights``): counts, rates and ranks.

``InsightReads`` is mixed into ``SqlStore``. Every figure is a ``GROUP BY`` (or a window
function) over the requests created in the window, answered by one covering index
(``requests_insights``), so the database hands back a few hundred groups, never the
requests: a million of them answer in seconds and in the memory of a page cache. Two
columns make that possible without reading each row's JSON: ``asked_by`` (the rule ids
whose ask made the request, written with it: ``asked_by``) and ``decided_at`` /
``decided`` (stamped by a trigger when a decision moves the request out of pending).
The rules verdict events name are read through a partial index on the audit.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from signoff.insights import (
    NO_RULE,
    Count,
    Day,
    Insights,
    Repeat,
    RuleRates,
    Thread,
    Wait,
    day_of,
)

if TYPE_CHECKING:
    from signoff.store.sqltx import SqlTx

VERDICT_KINDS = ("call.allowed", "call.denied", "call.blocked")
# The SQL of each dialect where they differ: the UTC day of ``created_at``, and the rules
# of a verdict event (the same expression as the index ``audit_verdict_rules``).
_DAY = {"sqlite": "CAST(created_at / 86400 AS INTEGER)",
        "postgres": "CAST(FLOOR(created_at / 86400) AS BIGINT)"}
_RULES = {"sqlite": "(data ->> '$.rules')", "postgres": "((data::jsonb) ->> 'rules')"}
# The index a read walks, where SQLite would otherwise pick a narrower one and read each
# row it finds (the tool of an expired request; the audit by ``request_id``).
_BY = {"sqlite": {"insights": " INDEXED BY requests_insights",
                  "verdicts": " INDEXED BY audit_verdict_rules"},
       "postgres": {"insights": "", "verdicts": ""}}
# Where verdict events are read: the chain, and on PostgreSQL the events not sealed yet.
_VERDICT_TABLES = {"sqlite": ("audit" + _BY["sqlite"]["verdicts"],),
                   "postgres": ("audit", "audit_pending")}
_RISKS = ("low", "medium", "high", "critical")


def asked_by(reasons: Iterable[Mapping[str, Any]]) -> str:
    """The rules that made an ask: the ids of its reasons whose effect is ``ask``, sorted
    and joined by a space; without one, the step of its last reason in parentheses
    (``(gated)``, ``(unknown_tool)``, ``(shell)``…). Migration "insights" computes the
    same in SQL for the requests stored before it."""
    listed = list(reasons)
    rules = sorted({str(r["rule"]) for r in listed if r.get("effect") == "ask" and r.get("rule")})
    if rules:
        return " ".join(rules)
    step = listed[-1].get("step") if listed else None
    return f"({step or 'none'})"


class InsightReads:
    """Short reads; ``SqlStore`` supplies ``_reader``."""

    def _reader(self) -> AbstractContextManager[SqlTx]:
        raise NotImplementedError

    def insights(self, *, since: float | None = None, until: float | None = None,
                 rules: Sequence[str] = (), top: int = 20) -> Insights:
        """The figures of the requests created in ``[since, until)``; ``rules``: the
        policy's rule ids, of which those no ask and no verdict event in the window named
        are ``never_matched``; ``top``: how many threads and repeated calls to rank."""
        clauses, params = [], []
        if since is not None:
            clauses.append("created_at >= ?")
            params.append(since)
        if until is not None:
            clauses.append("created_at < ?")
            params.append(until)
        where = " AND ".join(clauses) or "1 = 1"
        with self._reader() as tx:
            dialect = tx.dialect.name
            day = _DAY[dialect]

            def rows(sql: str, *more: Any, given: Sequence[Any] = params) -> list[Any]:
                return list(tx._exec(sql, [*given, *more]).fetchall())

            cube = rows(f"SELECT tool, asked_by, status, decided, {day}, COUNT(*) FROM requests "
                        f"WHERE {where} GROUP BY tool, asked_by, status, decided, {day}")
            asked = f"{where} AND thread_id IS NOT NULL"
            threads = rows("SELECT COUNT(*) FROM (SELECT thread_id FROM requests WHERE "
                           f"{asked} GROUP BY thread_id) listed")[0][0]
            top_threads = rows(f"SELECT thread_id, COUNT(*) FROM requests WHERE {asked} "
                               "GROUP BY thread_id ORDER BY COUNT(*) DESC, thread_id LIMIT ?",
                               top)
            marks = ", ".join("?" for _ in top_threads)
            thread_days = rows(
                f"SELECT thread_id, {day}, COUNT(*) FROM requests WHERE {where} AND "
                f"thread_id IN ({marks}) GROUP BY thread_id, {day}",
                *(t for t, _ in top_threads)) if top_threads else []
            repeated = rows(
                f"SELECT tool, args_hash, COUNT(*) FROM requests WHERE {where} "
                "GROUP BY tool, args_hash HAVING COUNT(*) > 1 "
                "ORDER BY COUNT(*) DESC, tool, args_hash LIMIT ?", top)
            waits = _waits(dialect, rows, f"{where} AND decided_at IS NOT NULL")
            expired = rows(
                f"SELECT tool, COUNT(*) FROM requests r{_BY[dialect]['insights']} "
                f"WHERE {where} AND status = 'expired' "
                "AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.request_id = r.id) "
                "GROUP BY tool")
            at = [int(v * 1_000_000) for v in params]
            kinds = ", ".join(f"'{k}'" for k in VERDICT_KINDS)
            # PostgreSQL seals after commit: a verdict still in ``audit_pending`` counts too,
            # read in the same statement (one snapshot: a seal pass moves none out of sight).
            verdicts = rows(" UNION ".join(
                f"SELECT {_RULES[dialect]} FROM {table} "
                f"WHERE request_id IS NULL AND kind IN ({kinds})"
                + (" AND at_us >= ?" if since is not None else "")
                + (" AND at_us < ?" if until is not None else "")
                for table in _VERDICT_TABLES[dialect]), given=at * len(_VERDICT_TABLES[dialect]))
        return _assembled(since, until, rules, {
            "cube": cube, "threads": threads, "top_threads": top_threads,
            "thread_days": thread_days, "repeated": repeated, "waits": waits,
            "expired": expired, "verdicts": verdicts})


def _waits(dialect: str, rows: Any, where: str) -> list[tuple[str, int, float, float]]:
    """Per risk: how many asks a decision settled, and the median and p90 of their waits,
    by nearest rank (the ceil(n/2)-th and ceil(9n/10)-th wait): PostgreSQL's
    ``percentile_disc``; on SQLite an ordered offset along ``requests_waits``."""
    wait = "decided_at - created_at"
    if dialect == "postgres":
        return [(str(risk), int(n), float(median), float(p90)) for risk, n, median, p90 in rows(
            f"SELECT risk, COUNT(*), percentile_disc(0.5) WITHIN GROUP (ORDER BY {wait}), "
            f"percentile_disc(0.9) WITHIN GROUP (ORDER BY {wait}) FROM requests "
            f"WHERE {where} GROUP BY risk")]
    out = []
    for risk, n in rows(f"SELECT risk, COUNT(*) FROM requests WHERE {where} GROUP BY risk"):
        ranked = [rows(f"SELECT {wait} FROM requests WHERE {where} AND risk = ? "
                       f"ORDER BY {wait} LIMIT 1 OFFSET ?", risk, rank - 1)[0][0]
                  for rank in ((n + 1) // 2, (9 * n + 9) // 10)]
        out.append((str(risk), int(n), float(ranked[0]), float(ranked[1])))
    return out


def _assembled(since: float | None, until: float | None, rules: Sequence[str],
               found: Mapping[str, Any]) -> Insights:
    """The figures from the groups the database handed back (``found``, by query)."""
    tools: dict[str, int] = defaultdict(int)
    statuses: dict[str, int] = defaultdict(int)
    days: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    made: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
    outcome = {"approve": 2, "edit": 3, "reject": 4, "respond": 5}
    for tool, makers, status, decided, number, n in found["cube"]:
        tools[tool] += n
        statuses[status] += n
        days[int(number)][tool] += n
        key = str(makers) if makers else "(none)"
        for rule in [key] if key.startswith(NO_RULE) else key.split(" "):
            counts = made[rule]
            counts[0] += n
            if decided in outcome:
                counts[1] += n
                counts[outcome[decided]] += n
    matched = {rule for rule in made if not rule.startswith(NO_RULE)}
    for (listed,) in found["verdicts"]:
        if listed:
            matched.update(str(rule) for rule in json.loads(listed))
    per_thread: dict[str, dict[int, int]] = defaultdict(dict)
    for thread, number, n in found["thread_days"]:
        per_thread[thread][int(number)] = int(n)
    return Insights(
        since=since, until=until, asks=sum(tools.values()), threads=int(found["threads"]),
        statuses=_ranked(statuses), tools=_ranked(tools),
        rules=tuple(RuleRates(rule, *counts) for rule, counts in
                    sorted(made.items(), key=lambda item: (-item[1][0], item[0]))),
        top_threads=tuple(
            Thread(str(t), int(n), tuple(Count(day_of(number), asks) for number, asks
                                         in sorted(per_thread[t].items())))
            for t, n in found["top_threads"]),
        days=tuple(Day(day_of(number), sum(listed.values()), _ranked(listed))
                   for number, listed in sorted(days.items())),
        waits=tuple(Wait(risk, n, median, p90) for risk, n, median, p90 in
                    sorted(found["waits"], key=lambda w: _RISKS.index(w[0]))),
        repeated=tuple(Repeat(str(t), str(h), int(n)) for t, h, n in found["repeated"]),
        never_matched=tuple(rule for rule in rules if rule not in matched),
        expired_unanswered=sum(int(n) for _, n in found["expired"]),
        expired_by_tool=_ranked({str(t): int(n) for t, n in found["expired"]}))


def _ranked(counts: Mapping[str, int]) -> tuple[Count, ...]:
    return tuple(Count(key, int(n)) for key, n in
                 sorted(counts.items(), key=lambda item: (-item[1], item[0])))
