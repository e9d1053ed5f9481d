"""What ``signoff demo`` prints: a few human lines per step, or JSON lines with ``--json``.

Every line is flushed as it is written: the demo waits for humans between
steps, and whoever reads its output (a person, a pipe, a test) must see the
request to decide before the demo blocks on it.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from signoff.audit import AuditEvent, AuditKind, Verification
from signoff.demo.tools import describe_result
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.model import Verdict

WIDTH = 100
RULE = "=" * 78


class Report:
    def __init__(self, *, as_json: bool, out: TextIO | None = None) -> None:
        self.as_json = as_json
        self.out = out or sys.stdout

    def _line(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def _json(self, event: str, **data: Any) -> None:
        self._line(json.dumps({"event": event, **data}, ensure_ascii=False))

    def _wrapped(self, text: str, indent: str, more: str | None = None) -> None:
        more = " " * len(indent) + "  " if more is None else more
        for line in textwrap.wrap(text, WIDTH, initial_indent=indent,
                                  subsequent_indent=more) or [indent]:
            self._line(line)

    # ---- start ---------------------------------------------------------------------------------

    def start(self, info: Mapping[str, Any], *, notes: Sequence[str]) -> None:
        if self.as_json:
            self._json("start", **info, notes=list(notes))
            return
        self._line("signoff demo: a scripted agent (deterministic, no LLM) works in a temporary "
                   "workspace;")
        self._line("every tool call it makes goes through the gate, and a human answers the asks.")
        self._line()
        self._line(f"  workspace  {info['workspace']}  ({', '.join(info['files'])})")
        self._line(f"  policy     {info['policy']}  (the starter policy + rule review-writes)")
        self._line(f"  database   {info['db']}")
        self._line(f"  inbox      {info['inbox']}")
        self._line()
        self._line(RULE)
        self._line("  Open the inbox to decide what the agent asks for. This link signs you in")
        self._line("  as 'admin' (it works once, within 10 minutes):")
        self._line()
        self._line(f"      {info['login_url']}")
        self._line(RULE)
        self._line("  Or decide from another terminal with the command printed with each request")
        self._line("  (`requests reject ID --reason WHY …` refuses it; the agent reads why).")
        for note in notes:
            self._wrapped(note, "  ")
        self._line()

    # ---- steps ---------------------------------------------------------------------------------

    def step(self, number: int, say: str, tool: str, args: Mapping[str, Any],
             interaction: str) -> None:
        if self.as_json:
            return
        where = "" if interaction == "interactive" else f"   [{interaction} run]"
        self._line(f"{number:2}. {say}")
        self._line(f"    {tool} {json.dumps(args, ensure_ascii=False)}{where}")

    def verdict(self, verdict: Verdict) -> None:
        if self.as_json:
            return
        rules = [r.rule for r in verdict.reasons if r.rule]
        because = f" [{', '.join(rules)}]" if rules else ""
        self._wrapped(f"{verdict.effect.value.upper():<7}  risk {verdict.risk.value}{because}: "
                      f"{verdict.message}", "    ")

    def pending(self, number: int, request_id: str, *, url: str, cli: str,
                auto_after: float | None) -> None:
        if self.as_json:
            self._json("pending", step=number, request_id=request_id, inbox_url=url, cli=cli,
                       auto_approve_after=auto_after)
            return
        self._line(f"    request {request_id} waits for a human. Decide it in the inbox:")
        self._line(f"      {url}")
        self._line("    or on the command line:")
        self._line(f"      {cli}")
        if auto_after is not None:
            self._line(f"    (demo-approver approves it in {auto_after:g} s if nobody decides "
                       "first)")
        else:
            self._line("    waiting… (Ctrl-C stops the demo)")

    def outcome(self, number: int, row: Mapping[str, Any], outcome: Outcome | None,
                decided_by: Sequence[str], expected: bool) -> None:
        if self.as_json:
            self._json("step", step=number, **row,
                       outcome=outcome.to_dict() if outcome else None,
                       decided_by=list(decided_by), ok=expected)
            return
        text = _outcome_text(str(row["tool"]), outcome, decided_by)
        if text:
            self._wrapped(text, "    → ")
        if not expected:
            self._line(f"    !! the script expected {row['expected']}, got {row['effect']}"
                       + (f" / {outcome.kind.value}" if outcome else ""))
        self._line()

    # ---- the end -------------------------------------------------------------------------------

    def audit(self, events: Iterable[AuditEvent], *, db: str) -> None:
        if not self.as_json:
            self._line(f"Audit trail (also: signoff audit export --db {db}):")
            self._line(f"  {'#':>3}  {'event':<18}  {'request':<36}  {'actor':<14}  about")
        for event in events:
            about = _about(event)
            if self.as_json:
                self._json("audit", index=event.index, kind=event.kind,
                           request_id=event.request_id, actor=event.actor, about=about)
            else:
                self._line(f"  {event.index:>3}  {event.kind:<18}  {event.request_id or '-':<36}"
                           f"  {event.actor or '-':<14}  {about}".rstrip())

    def verified(self, result: Verification) -> None:
        if self.as_json:
            self._json("verified", **result.to_dict())
        elif result.ok:
            self._line(f"audit verified: {result.count} events")
        else:
            self._line(f"audit BROKEN at index {result.first_bad}: {result.reason}")

    def end(self, *, ok: bool, steps: int, failed: Sequence[int], kept: str | None,
            serving: bool) -> None:
        if self.as_json:
            self._json("end", ok=ok, steps=steps, unexpected=list(failed), kept=kept)
            return
        if failed:
            self._line(f"{len(failed)} of {steps} steps did not go as the script expected: "
                       f"{', '.join(map(str, failed))}.")
        else:
            self._line(f"All {steps} steps went as the script expected.")
        if kept:
            self._line(f"The database, policy and workspace stay in {kept}.")
        if not serving:
            self._line("The demo's server has stopped: run `signoff serve` to keep an inbox "
                       "running.")

    def note(self, text: str) -> None:
        if self.as_json:
            self._json("note", text=text)
        else:
            self._wrapped(text, "")


def _about(event: AuditEvent) -> str:
    """The user or tool an event is about, from its data."""
    try:
        data = json.loads(event.data)
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    if event.kind == AuditKind.DECISION_RECORDED:
        reason = data.get("reason")
        return str(data.get("kind", "")) + (f": {reason}" if reason else "")
    return str(data.get("name") or data.get("tool") or "")


def _outcome_text(tool: str, outcome: Outcome | None, decided_by: Sequence[str]) -> str:
    if outcome is None:
        return ""
    who = f" by {', '.join(decided_by)}" if decided_by else ""
    kind = outcome.kind
    if kind is OutcomeKind.EXECUTED:
        lead = f"approved{who}; ran once: " if who else "ran: "
        return lead + describe_result(tool, outcome.result)
    if kind is OutcomeKind.REJECTED:
        alternatives = (f" (alternatives: {'; '.join(outcome.alternatives)})"
                        if outcome.alternatives else "")
        return f"rejected{who}: {outcome.reason}{alternatives}. The agent carries on without it."
    if kind is OutcomeKind.RESPONDED:
        return f"answered{who} instead of running: {outcome.message}"
    if kind in (OutcomeKind.DENIED, OutcomeKind.BLOCKED):
        return f"{kind.value}: the call did not run; the agent reads the reason above"
    if kind is OutcomeKind.FAILED:
        return f"the tool failed: {outcome.error}"
    detail = outcome.reason or outcome.message or outcome.code or ""
    return f"{kind.value}{who}" + (f": {detail}" if detail else "")
