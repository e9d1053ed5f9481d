"""The outbox on both backends, driven tick by tick with a clock of the test's own: what is
fanned out, signed, retried, killed off and replayed, in which order, and how often."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from receiver import Receiver

from signoff import Gate, Policy, RunContext, ToolCall
from signoff.identity import Identity
from signoff.kernel.proposing import ProposalKind
from signoff.kernel.webhooks import Webhooks
from signoff.model import Decision, DecisionKind
from signoff.notify import webhook_admin
from signoff.notify.config import Filters, NotifyConfig, Retry, WebhookEndpoint, new_secret
from signoff.notify.notifier import Notifier
from signoff.store.base import Store

T0 = 1_700_000_000.0
POLICY = """
[policy]
version = "notify-1"
unknown_tools = "ask"
[tools.deploy]
[tools.shell]
[tools.deploy_status]
[[rules]]
id = "deploys-are-high"
effect = "ask"
tool = "deploy"
risk = "high"
[[rules]]
id = "shell-asks"
effect = "ask"
tool = "shell"
risk = "high"
[[rules]]
id = "status-is-low"
effect = "ask"
tool = "deploy_status"
risk = "low"
"""


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


class Kit:
    def __init__(self, store: Store, receiver: Receiver, **endpoint: Any) -> None:
        self.clock = Clock()
        self.store = store
        self.receiver = receiver
        self.gate = Gate(Policy.from_toml(POLICY), store, clock=self.clock, agent="bot")
        self.alice: Identity = self.gate.add_user("alice")[0]
        self.hook = WebhookEndpoint(name="ops", url=receiver.url, secret=receiver.secret,
                                    **endpoint)
        self.retry = Retry(base=10.0, cap=100.0, max_attempts=4, timeout=5.0)
        self.notifier = self.make_notifier()
        self.calls = 0

    def make_notifier(self, owner: str | None = None) -> Notifier:
        return Notifier(self.store, NotifyConfig(webhooks=(self.hook,), retry=self.retry,
                                             allow_private_targets=True),
                        base_url=lambda: "http://inbox.test", clock=self.clock,
                        owner=owner)

    def ask(self, tool: str = "deploy", thread: str = "t-1", **args: Any) -> str:
        self.calls += 1
        proposal = self.gate.propose(
            ToolCall(id=f"c{self.calls}", name=tool, args=args or {"service": "web"}),
            RunContext(thread_id=thread, principal="paula"))
        assert proposal.kind is ProposalKind.PENDING
        assert proposal.request is not None
        return proposal.request.id

    def approve(self, request_id: str) -> None:
        self.gate.decide(request_id, Decision(kind=DecisionKind.APPROVE), identity=self.alice)

    def deliveries(self, status: str | None = None) -> list[Any]:
        return self.store.deliveries(status=status, limit=1000)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver(new_secret())
    yield running
    running.close()


@pytest.fixture
def kit(store: Store, receiver: Receiver) -> Iterator[Kit]:
    made = Kit(store, receiver)
    made.notifier.tick()  # the channel starts at the audit's head: users added are not told
    yield made
    made.notifier.stop()


def test_created_and_decided_arrive_signed_with_the_exact_arguments(kit: Kit) -> None:
    request_id = kit.ask(service="web", replicas=3)
    kit.notifier.tick()
    kit.approve(request_id)
    kit.notifier.tick()
    arrivals = kit.receiver.arrivals
    assert [a.verified for a in arrivals] == [True, True]  # the library's own verifier
    created, decided = (a.payload for a in arrivals)
    assert created["type"] == "request.created"
    request = kit.store.get_request(request_id)
    assert request is not None
    assert created["data"]["args"] == json.loads(request.args) == {"replicas": 3,
                                                                     "service": "web"}
    assert created["data"]["args_hash"] == request.args_hash
    assert created["data"]["risk"] == "high"
    assert created["data"]["url"] == f"http://inbox.test/requests/{request_id}"
    assert decided["type"] == "request.decided"
    assert decided["data"]["status"] == "approved"
    assert [d["approver"] for d in decided["data"]["decisions"]] == ["alice"]
    # the webhook-id is the audit event's id, as the payload says
    assert [a.webhook_id for a in arrivals] == [created["data"]["event_id"],
                                                decided["data"]["event_id"]]
    assert {d.status for d in kit.deliveries()} == {"delivered"}


def test_executed_and_failed_are_told(kit: Kit) -> None:
    ran: list[str] = []

    @kit.gate.tool()
    def deploy(service: str) -> str:
        if service == "bad":
            raise RuntimeError("boom")
        ran.append(service)
        return "ok"

    good, bad = kit.ask(service="web"), kit.ask(service="bad")
    kit.approve(good)
    kit.approve(bad)
    kit.gate.work()
    kit.notifier.tick()
    assert kit.receiver.types_of(good) == ["request.created", "request.decided",
                                           "request.executed"]
    assert kit.receiver.types_of(bad) == ["request.created", "request.decided",
                                          "request.failed"]
    assert ran == ["web"]


def test_a_failing_receiver_is_retried_with_backoff_then_the_delivery_dies(kit: Kit) -> None:
    kit.receiver.mode = "fail"
    kit.ask()
    kit.notifier.tick()
    [delivery] = kit.deliveries()
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("pending", 1, 503)
    waits = [delivery.next_at - T0]
    assert 5.0 <= waits[0] <= 10.0  # base 10 s, jitter over the upper half
    kit.notifier.tick()  # not due yet: nothing is sent
    assert kit.deliveries()[0].attempts == 1
    for attempt in (2, 3, 4):
        kit.clock.now = kit.deliveries()[0].next_at
        before = kit.clock.now
        kit.notifier.tick()
        [delivery] = kit.deliveries()
        assert delivery.attempts == attempt
        if attempt < 4:
            waits.append(delivery.next_at - before)
    assert delivery.status == "dead"
    # each wait about twice the one before (base × 2^(n-1), jittered into its upper half)
    assert 10.0 <= waits[1] <= 20.0 and 20.0 <= waits[2] <= 40.0
    assert kit.receiver.arrivals == []


def test_a_dead_delivery_is_replayed_with_the_same_id(kit: Kit) -> None:
    kit.receiver.mode = "fail"
    kit.ask()
    for _ in range(4):
        kit.notifier.tick()
        kit.clock.now += 200  # past each retry (capped at 100 s), short of the expiry
    [dead] = kit.deliveries("dead")
    kit.receiver.mode = "ok"
    with kit.store.transaction() as tx:
        assert tx.replay_deliveries(now=kit.clock.now, status="dead") == [dead.id]
    kit.notifier.tick()
    [arrival] = kit.receiver.arrivals
    assert arrival.webhook_id == dead.event_id
    assert kit.deliveries()[0].status == "delivered"


def test_a_request_s_events_stay_in_order_while_others_go_ahead(kit: Kit) -> None:
    first = kit.ask()
    kit.receiver.mode = "fail"
    kit.notifier.tick()  # first's created fails
    kit.receiver.mode = "ok"
    kit.approve(first)  # first's decided must wait for its created
    second = kit.ask(service="db")
    kit.notifier.tick()
    assert kit.receiver.types_of(second) == ["request.created"]
    assert kit.receiver.types_of(first) == []
    kit.clock.now += 100
    kit.notifier.tick()
    assert kit.receiver.types_of(first) == ["request.created", "request.decided"]


def test_filters_choose_what_an_endpoint_hears(store: Store, receiver: Receiver) -> None:
    kit = Kit(store, receiver, filters=Filters(events=("request.created",), risks=("high",),
                                               tools=("dep*",), threads=("org/*",)))
    kit.notifier.tick()
    told = kit.ask(thread="org/repo#1")
    kit.ask(thread="elsewhere")  # thread not matched
    kit.ask(tool="shell", thread="org/repo#2", command="ls")  # tool not matched
    kit.ask(tool="deploy_status", thread="org/repo#3", service="web")  # risk not matched
    kit.approve(told)  # event not matched
    kit.notifier.tick()
    assert [a.payload["data"]["request_id"] for a in receiver.arrivals] == [told]
    assert len(kit.deliveries()) == 1
    kit.notifier.stop()


def test_two_notifiers_fan_out_each_event_once(kit: Kit) -> None:
    other = kit.make_notifier(owner="elsewhere:1:x")
    for _ in range(3):
        kit.ask(service=f"s{kit.calls}")
    assert kit.store.seal(wait=5.0)  # what a tick does first: PostgreSQL seals after commit
    other.outbox.fan_out(other.channels())
    kit.notifier.outbox.fan_out(kit.notifier.channels())
    other.tick()
    kit.notifier.tick()
    assert len(kit.deliveries()) == 3
    assert len(receiver_ids := [a.webhook_id for a in kit.receiver.arrivals]) == 3
    assert len(set(receiver_ids)) == 3
    other.stop()


def test_an_attempt_cut_short_is_sent_again_after_its_lease(kit: Kit) -> None:
    kit.ask()
    dying = kit.make_notifier(owner="elsewhere:1:x")
    assert kit.store.seal(wait=5.0)  # what a tick does first: PostgreSQL seals after commit
    dying.outbox.fan_out(dying.channels())
    [claimed] = dying.outbox.claim(["webhook:ops"])  # ... and the server dies here
    kit.notifier.tick()
    assert kit.receiver.arrivals == []  # leased: not sent twice at once
    kit.clock.now = claimed.lease_until or 0.0
    kit.notifier.tick()
    [arrival] = kit.receiver.arrivals
    assert arrival.webhook_id == claimed.event_id
    # the late settle of the dead attempt changes nothing
    from signoff.notify.channels import Attempt
    assert dying.outbox.settle(claimed, Attempt(ok=False, error="late")) is None
    assert kit.deliveries()[0].status == "delivered"
    dying.stop()


def test_a_new_channel_hears_only_what_happens_after_it(store: Store,
                                                        receiver: Receiver) -> None:
    kit = Kit(store, receiver)
    kit.ask()  # before the channel's first fan-out
    kit.notifier.tick()
    assert receiver.arrivals == []
    later = kit.ask(service="db")
    kit.notifier.tick()
    assert receiver.types_of(later) == ["request.created"]
    kit.notifier.stop()


def test_a_registered_endpoint_hears_what_follows_its_registration_however_late_seen(
        store: Store, receiver: Receiver) -> None:
    """Registered, then a call, then the notifier's first look: the call is told (a channel
    that started where the notifier first saw it lost it). Removed and registered again,
    it starts afresh: nothing from while it was gone."""
    kit = Kit(store, receiver)
    kit.notifier.tick()
    config = NotifyConfig(retry=kit.retry, allow_private_targets=True)
    notifier = Notifier(store, config, base_url=lambda: "http://inbox.test", clock=kit.clock)
    desk = Receiver("")

    def register() -> None:
        _, desk.secret = webhook_admin.add_endpoint(
            Webhooks(store), config, name="desk", url=desk.url, filters=Filters(),
            actor="boss", now=kit.clock())
    try:
        register()
        first = kit.ask()
        notifier.tick()
        assert desk.types_of(first) == ["request.created"]
        webhook_admin.remove_endpoint(Webhooks(store), config, "desk", actor="boss",
                                      now=kit.clock())
        gone = kit.ask(service="db")
        notifier.tick()
        register()
        back = kit.ask(service="cache")
        notifier.tick()
        assert desk.types_of(gone) == []
        assert desk.types_of(back) == ["request.created"]
        assert all(a.verified for a in desk.arrivals)
    finally:
        notifier.stop()
        kit.notifier.stop()
        desk.close()
