"""Timers: reminders, escalations, and expiry recorded when it happens.

A pending request that nobody answers must not wait silently. When a request
is created, the timer pass (driven from the audit log by its own cursor, like
a channel) schedules, in the database: its **expiry** (every request that has
one), and for the first ``[[notify.escalation]]`` rule it matches, a
**reminder** after ``remind_after`` and an **escalation** after
``escalate_after``. Firing a due timer, the request still pending, writes an
audit event in the same transaction that marks the timer done:
``notify.reminder`` or ``notify.escalated`` (which the outbox turns into
``request.reminder`` / ``request.escalated`` deliveries), or moves the request
to ``expired`` (actor ``clock``, code ``expired``: never a human rejection).
The timer rows are claimed ``FOR UPDATE SKIP LOCKED``, so with several servers
on one PostgreSQL each timer fires once; they live in the database, so they
survive restarts. A timer whose request was decided meanwhile just ends.

Time is the notifier's clock (the gate's), so tests move it by hand.
"""

from __future__ import annotations

from collections.abc import Callable

from signoff.audit import AuditKind, to_us
from signoff.kernel import lifecycle
from signoff.model import ApprovalRequest, RequestStatus
from signoff.notify.config import Escalation
from signoff.store.base import Store, Tx

CURSOR = ":timers"  # a name no channel has (channel names hold no leading colon)
REMIND, ESCALATE, EXPIRE = "remind", "escalate", "expire"
BATCH = 200
LAG = 1_000  # how far the stored cursor may trail a pass that found nothing to schedule


def rule_for(rules: tuple[Escalation, ...], request: ApprovalRequest) -> int | None:
    for index, rule in enumerate(rules):
        if rule.filters.wants("request.created", risk=request.risk.value, tool=request.tool,
                              thread_id=request.thread_id):
            return index
    return None


class Timers:
    def __init__(self, store: Store, rules: tuple[Escalation, ...], *,
                 clock: Callable[[], float]) -> None:
        self.store = store
        self.rules = rules
        self.clock = clock
        self._seen = -1  # every creation up to this index has its timers, as this process knows
        self._stored = -1  # the stored cursor, as this process last read or wrote it

    def schedule(self) -> int:
        """Timers for the requests created since the last pass; how many."""
        head = self.store.audit_head()[0]
        if head <= self._seen:
            return 0  # nothing new: no write transaction (SQLite's lock stays free)
        if self._seen >= 0 and head - self._stored < LAG:
            # A read first: a pass over decisions only (most of a busy server's) finds no
            # creation, and then writes nothing; the stored cursor catches up on a pass
            # that schedules, or once it trails by ``LAG`` events.
            read_head, created = self.store.created_after(self._seen, 1)
            if not created:
                self._seen = max(self._seen, read_head)
                return 0
        made = 0
        while True:
            with self.store.transaction() as tx:
                cursor = tx.channel_cursor(CURSOR)
                # Every creation up to ``_seen`` has its timers (this process committed them,
                # or read that there was none): the stored cursor may trail it.
                start = max(cursor, self._seen)
                # Only the requests created since: the log's other events are passed over
                # in the database (a decision-only load reads nothing here).
                head, created = tx.created_after(start, BATCH)
                for _, request in created:
                    if request is not None:
                        made += self._schedule(tx, request)
                full = len(created) == BATCH
                upto = max(start, created[-1][0] if full else head)
                if upto > cursor:
                    tx.set_channel_cursor(CURSOR, upto)
            self._seen, self._stored = upto, max(upto, cursor)  # committed
            if not full:
                return made

    def _schedule(self, tx: Tx, request: ApprovalRequest) -> int:
        made = 0
        if request.expires_at is not None:
            tx.add_timer(request.id, EXPIRE, due_at=request.expires_at, rule=-1)
            made += 1
        index = rule_for(self.rules, request)
        if index is None:
            return made
        rule = self.rules[index]
        for kind, after in ((REMIND, rule.remind_after), (ESCALATE, rule.escalate_after)):
            if after is not None:
                tx.add_timer(request.id, kind, due_at=request.created_at + after, rule=index)
                made += 1
        return made

    def fire(self) -> int:
        """Fire every due timer once; how many fired on a still-pending request."""
        fired = 0
        due_first = self.store.next_timer_due()
        if due_first is None or due_first > self.clock():
            return 0
        while True:
            now = self.clock()
            with self.store.transaction() as tx:
                due = tx.due_timers(now=now, limit=BATCH)
                for request_id, kind, _, rule in due:
                    request = tx.get_request(request_id, lock=True)
                    if request is not None and request.status is RequestStatus.PENDING:
                        fired += self._fire(tx, request, kind, rule, now)
                    tx.finish_timer(request_id, kind, at=now)
            if len(due) < BATCH:
                return fired

    def _fire(self, tx: Tx, request: ApprovalRequest, kind: str, rule: int,
              now: float) -> int:
        waited = round(now - request.created_at, 3)
        if kind == EXPIRE:
            if request.expires_at is None or now < request.expires_at:
                return 0
            lifecycle.transition(tx, request, RequestStatus.EXPIRED, now=now, actor="clock",
                                 outcome_code="expired")
            return 1
        if not 0 <= rule < len(self.rules):  # the rule was removed from the policy file
            return 0
        if kind == REMIND:
            tx.append_audit(AuditKind.NOTIFY_REMINDER, at_us=to_us(now), request_id=request.id,
                            actor="clock", data={"rule": rule, "after": waited})
        else:
            tx.append_audit(AuditKind.NOTIFY_ESCALATED, at_us=to_us(now), request_id=request.id,
                            actor="clock", data={"rule": rule, "after": waited,
                                                 "channels": list(self.rules[rule].escalate_to)})
        return 1
