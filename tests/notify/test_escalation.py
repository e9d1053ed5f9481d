"""Reminders, escalations and expiry on timers, on both backends, with a clock the test moves
(no sleeping): each fires once, only while its request is pending, across a restart, and
once with two notifiers racing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from receiver import Receiver

from kit import twin_store
from signoff import Gate, Policy, RunContext, ToolCall
from signoff.kernel.proposing import ProposalKind
from signoff.model import Decision, DecisionKind
from signoff.notify.config import (
    Escalation,
    Filters,
    NotifyConfig,
    Retry,
    WebhookEndpoint,
    new_secret,
)
from signoff.notify.notifier import Notifier
from signoff.store.base import Store

T0 = 1_700_000_000.0
MINUTE = 60.0
POLICY = """
[policy]
version = "escalation-1"
default_expires = "2h"
[tools.deploy]
[tools.status]
[[rules]]
id = "deploys-are-high"
effect = "ask"
tool = "deploy"
risk = "high"
[[rules]]
id = "status-is-low"
effect = "ask"
tool = "status"
risk = "low"
"""
RULES = (Escalation(filters=Filters(risks=("high",)), remind_after=15 * MINUTE,
                    escalate_after=60 * MINUTE, escalate_to=("webhook:leads",)),)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


class Rig:
    def __init__(self, store: Store, ops: Receiver, leads: Receiver) -> None:
        self.clock = Clock()
        self.store = store
        self.ops, self.leads = ops, leads
        self.gate = Gate(Policy.from_toml(POLICY), store, clock=self.clock, agent="bot")
        self.alice = self.gate.add_user("alice")[0]
        self.notifiers: list[Notifier] = []
        self.notifier = self.make(store)
        self.notifier.tick()
        self.calls = 0

    def make(self, store: Store, owner: str | None = None) -> Notifier:
        hooks = (WebhookEndpoint(name="ops", url=self.ops.url, secret=self.ops.secret),
                 # leads hear only what is escalated to them: their filter says created
                 WebhookEndpoint(name="leads", url=self.leads.url, secret=self.leads.secret,
                                 filters=Filters(events=("request.created",),
                                                 risks=("critical",))))
        made = Notifier(store, NotifyConfig(webhooks=hooks, escalation=RULES,
                                            retry=Retry(base=1.0, cap=5.0),
                                            allow_private_targets=True),
                        base_url=lambda: "http://inbox.test", clock=self.clock, owner=owner)
        self.notifiers.append(made)
        return made

    def ask(self, tool: str = "deploy") -> str:
        self.calls += 1
        proposal = self.gate.propose(ToolCall(id=f"c{self.calls}", name=tool,
                                              args={"service": f"s{self.calls}"}),
                                     RunContext(thread_id=f"t{self.calls}", principal="paula"))
        assert proposal.kind is ProposalKind.PENDING and proposal.request is not None
        return proposal.request.id

    def at(self, minutes: float) -> None:
        self.clock.now = T0 + minutes * MINUTE
        self.notifier.tick()

    def close(self) -> None:
        for notifier in self.notifiers:
            notifier.stop()


@pytest.fixture
def rig(store: Store) -> Iterator[Rig]:
    ops, leads = Receiver(new_secret()), Receiver(new_secret())
    made = Rig(store, ops, leads)
    yield made
    made.close()
    ops.close()
    leads.close()


def payloads(receiver: Receiver, request_id: str) -> list[dict[str, Any]]:
    return [a.payload for a in receiver.unique().values()
            if a.payload["data"]["request_id"] == request_id]


@pytest.mark.slow
def test_remind_then_escalate_then_expire(rig: Rig) -> None:
    request_id = rig.ask()
    rig.at(0)
    assert rig.ops.types_of(request_id) == ["request.created"]
    rig.at(14.9)
    assert rig.ops.types_of(request_id) == ["request.created"]
    rig.at(15)
    assert rig.ops.types_of(request_id) == ["request.created", "request.reminder"]
    assert rig.leads.types_of(request_id) == []
    rig.at(59)
    assert rig.leads.types_of(request_id) == []
    rig.at(60)
    [escalated] = payloads(rig.leads, request_id)
    assert escalated["type"] == "request.escalated"
    assert escalated["data"]["escalated_to"] == ["webhook:leads"]
    assert escalated["data"]["waiting_seconds"] == 3600.0
    assert "request.escalated" not in rig.ops.types_of(request_id)  # only the named channels
    rig.at(119)
    assert rig.store.get_request(request_id).status.value == "pending"  # type: ignore[union-attr]
    rig.at(120)
    request = rig.store.get_request(request_id)
    assert request is not None and request.status.value == "expired"
    expired = payloads(rig.ops, request_id)[-1]
    assert expired["type"] == "request.expired"
    assert expired["data"]["actor"] == "clock" and expired["data"]["decisions"] == []
    assert expired["data"]["outcome_code"] == "expired"  # never a human rejection
    rig.at(500)
    assert rig.ops.types_of(request_id) == ["request.created", "request.reminder",
                                            "request.expired"]


@pytest.mark.slow
def test_a_decided_request_is_not_reminded_and_low_risk_only_expires(rig: Rig) -> None:
    decided, low = rig.ask(), rig.ask("status")
    rig.at(1)
    rig.gate.decide(decided, Decision(kind=DecisionKind.APPROVE), identity=rig.alice)
    rig.at(200)
    assert rig.ops.types_of(decided) == ["request.created", "request.decided"]
    assert rig.leads.types_of(decided) == []
    assert rig.ops.types_of(low) == ["request.created", "request.expired"]
    assert [t[0] for t in rig.store.timers(decided)] == ["remind", "escalate", "expire"]
    assert all(done is not None for _, _, done in rig.store.timers(decided))


@pytest.mark.slow
def test_timers_survive_a_restart(rig: Rig) -> None:
    request_id = rig.ask()
    rig.at(1)
    rig.notifier.stop()  # the server goes away with its timers due later
    reopened = twin_store(rig.store)
    try:
        again = rig.make(reopened, owner="host:2:restarted")
        rig.clock.now = T0 + 16 * MINUTE
        again.tick()
        assert rig.ops.types_of(request_id) == ["request.created", "request.reminder"]
        rig.clock.now = T0 + 121 * MINUTE
        again.tick()
        assert reopened.get_request(request_id).status.value == "expired"  # type: ignore[union-attr]
        again.stop()
    finally:
        reopened.close()


@pytest.mark.slow
def test_two_notifiers_racing_fire_each_timer_once(rig: Rig) -> None:
    made = [rig.ask() for _ in range(12)]
    rig.at(1)
    other_store = twin_store(rig.store)
    try:
        other = rig.make(other_store, owner="host:3:other")
        rig.clock.now = T0 + 61 * MINUTE
        threads = [threading.Thread(target=n.tick) for n in (rig.notifier, other)
                   for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        kinds = [e.kind for e in rig.store.audit_events()
                 if e.kind.startswith("notify.")]
        assert kinds.count("notify.reminder") == 12
        assert kinds.count("notify.escalated") == 12
        for request_id in made:
            assert [p["type"] for p in payloads(rig.leads, request_id)] == [
                "request.escalated"]
        ids = [a.webhook_id for a in rig.ops.arrivals + rig.leads.arrivals]
        assert len(ids) == len(set(ids)), "no event sent twice"
        other.stop()
    finally:
        other_store.close()


def test_the_timer_pass_passes_over_other_events_beyond_a_batch(rig: Rig) -> None:
    """The timer pass reads only the requests created since its cursor (``created_after``):
    more than a batch of other events between two requests moves its cursor to the head and
    schedules both requests' timers, once."""
    from signoff.notify.timers import BATCH, CURSOR

    first = rig.ask()
    with rig.store.transaction() as tx:
        tx.append_audits([("call.allowed", 1, "bot", {"n": n}) for n in range(BATCH * 2 + 50)])
    second = rig.ask()
    rig.store.seal()
    timers = rig.notifier.timers
    assert timers.schedule() == 6  # each: its expiry, a reminder and an escalation
    assert timers.schedule() == 0
    with rig.store.transaction() as tx:
        assert tx.channel_cursor(CURSOR) == rig.store.audit_head()[0]
    rig.at(16)
    reminded = {p["data"]["request_id"] for p in
                (a.payload for a in rig.ops.unique().values())
                if p["type"] == "request.reminder"}
    assert reminded == {first, second}


def stored_cursor(store: Store) -> int:
    from signoff.notify.timers import CURSOR

    with store.transaction() as tx:
        return tx.channel_cursor(CURSOR)


def other_events(store: Store, count: int) -> None:
    with store.transaction() as tx:
        tx.append_audits([("call.allowed", 1, "bot", {"n": n}) for n in range(count)])
    store.seal()


def test_a_pass_over_events_that_create_nothing_writes_no_cursor(rig: Rig) -> None:
    """A busy server's passes mostly see decisions: they read, find no creation, and write
    nothing; the next creation still gets its timers, and its pass stores the cursor."""
    timers = rig.notifier.timers
    before = stored_cursor(rig.store)
    other_events(rig.store, 30)
    assert timers.schedule() == 0
    assert stored_cursor(rig.store) == before  # no write
    assert timers.schedule() == 0  # and the next pass does not read again
    request_id = rig.ask()
    rig.store.seal()
    assert timers.schedule() == 3
    assert stored_cursor(rig.store) == rig.store.audit_head()[0]
    assert [t[0] for t in rig.store.timers(request_id)] == ["remind", "escalate", "expire"]


def test_the_stored_cursor_catches_up_once_it_trails_by_a_lag(rig: Rig) -> None:
    from signoff.notify.timers import LAG

    timers = rig.notifier.timers
    before = stored_cursor(rig.store)
    other_events(rig.store, LAG - 10)
    assert timers.schedule() == 0
    assert stored_cursor(rig.store) == before
    other_events(rig.store, 20)
    assert timers.schedule() == 0
    assert stored_cursor(rig.store) == rig.store.audit_head()[0]


def test_a_restart_reads_from_the_stored_cursor_and_misses_no_creation(rig: Rig) -> None:
    """The stored cursor trails what a pass read; a notifier started later (or on another
    server) reads from it, and schedules a creation that came after, once."""
    other_events(rig.store, 40)
    assert rig.notifier.timers.schedule() == 0
    rig.notifier.stop()
    request_id = rig.ask()
    reopened = twin_store(rig.store)
    try:
        again = rig.make(reopened, owner="host:4:later")
        reopened.seal()
        assert again.timers.schedule() == 3
        assert rig.notifier.timers.schedule() == 0  # the first one's timers: already there
        assert [t[0] for t in reopened.timers(request_id)] == ["remind", "escalate", "expire"]
        again.stop()
    finally:
        reopened.close()


def test_a_pass_with_no_channel_leaves_sealing_to_the_sealer(postgres_store: Store) -> None:
    """With nothing to fan out, a pass does not seal (the store's sealer does, and the feed
    then wakes the notifier): its timers come from what is sealed, and nothing is missed."""
    store = postgres_store
    store.sealer.stop()  # type: ignore[attr-defined]  # the test seals by hand
    clock = Clock()
    gate = Gate(Policy.from_toml(POLICY), store, clock=clock, agent="bot")
    bare = Notifier(store, NotifyConfig(escalation=RULES), base_url=lambda: "http://inbox.test",
                    clock=clock)
    try:
        proposal = gate.propose(ToolCall(id="c1", name="deploy", args={"service": "web"}),
                                RunContext(thread_id="t1", principal="paula"))
        assert proposal.request is not None
        request_id = proposal.request.id
        bare.tick()
        assert store.unsealed()[0] > 0  # the pass did not seal
        assert store.timers(request_id) == []
        store.seal()
        bare.tick()
        assert [t[0] for t in store.timers(request_id)] == ["remind", "escalate", "expire"]
        clock.now = T0 + 121 * MINUTE
        bare.tick()
        store.seal()
        request = store.get_request(request_id)
        assert request is not None and request.status.value == "expired"
    finally:
        bare.stop()


def test_a_pass_with_a_channel_seals_before_it_fans_out(postgres_store: Store) -> None:
    store = postgres_store
    store.sealer.stop()  # type: ignore[attr-defined]
    ops, leads = Receiver(new_secret()), Receiver(new_secret())
    rig = Rig(store, ops, leads)
    try:
        request_id = rig.ask()
        rig.notifier.tick()
        assert store.unsealed()[0] == 0
        assert rig.ops.types_of(request_id) == ["request.created"]
    finally:
        rig.close()
        ops.close()
        leads.close()
