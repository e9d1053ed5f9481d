"""A request or approver changed between a decision's read and its write is decided as
under the row's lock: a decision on PostgreSQL on a request another process wrote reads it
without a lock, and that shortcut must never give another answer.

The row and the approver are read in one statement outside any transaction, and the
decision is written as on a row this process wrote
(``test_decide_changed_since_proposal.py``): one statement whose compare-and-set requires,
inside PostgreSQL, the row still at the version read, pending, with the arguments read,
and the approver still stored as read. Each case here changes one of those in the window
between that read and the write — through a second store on the same database, or behind
the store's back — and checks that the decision is what a decision on the row read under
its lock gives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from backdoor import raw
from kit import OPS_POLICY, round_trips, statements, twin_store
from signoff.canonical import args_hash, canonical_text
from signoff.errors import Conflict, Expired, Forbidden, InvalidInput, Unauthenticated
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind
from signoff.model import ApprovalRequest, Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store

POLICY = OPS_POLICY.replace("{version}", "read-first-1")


class Pair:
    """``there`` proposes (it is the other server); ``here`` decides, knowing nothing."""

    def __init__(self, here: Gate, there: Gate, alice: Identity) -> None:
        self.here, self.there, self.alice = here, there, alice
        self.reads = 0

    def propose(self, n: int = 1, command: str = "make build") -> ApprovalRequest:
        proposal = self.there.propose(ToolCall(id=f"c-{n}", name="execute",
                                               args={"command": command}),
                                      RunContext(thread_id=f"t-{n}"))
        assert proposal.request is not None
        assert proposal.request.id not in self.here.written._rows  # not written here
        return proposal.request

    def stored(self, request: ApprovalRequest) -> ApprovalRequest:
        row = self.here.store.get_request(request.id)
        assert row is not None
        return row

    def after_read(self, monkeypatch: pytest.MonkeyPatch, change: Callable[[], Any]) -> None:
        """Make ``change`` in the window between ``here``'s read and its write (once)."""
        store = self.here.store
        read = store.request_and_user

        def reading(request_id: str, user: str) -> Any:
            answer = read(request_id, user)
            self.reads += 1
            if self.reads == 1:
                change()
            return answer

        monkeypatch.setattr(store, "request_and_user", reading)


@pytest.fixture
def pair(postgres_store: Store, workspace: Path) -> Iterator[Pair]:
    policy = Policy.from_toml(POLICY.format(root=workspace), source="read-first.toml")
    other_store = twin_store(postgres_store)
    try:
        here = Gate(policy, postgres_store)
        there = Gate(policy, other_store)
        alice, _ = there.add_user("alice", roles=["ops"])
        for gate in (here, there):
            @gate.tool(name="execute")
            def execute(command: str) -> str:
                return f"ran {command}"
        yield Pair(here, there, alice)
    finally:
        other_store.close()


def test_a_decision_on_a_request_written_elsewhere_is_a_read_and_one_statement(
        pair: Pair) -> None:
    pair.here.decide(pair.propose(0).id, Decision.approve(), identity=pair.alice)  # warm
    request = pair.propose()
    with round_trips() as counted, statements() as sent:
        result = pair.here.decide(request.id, Decision.approve(), identity=pair.alice)
    assert counted[0] == 2
    assert len(sent) == 2 and "FOR UPDATE" not in sent[0] and "signoff_expect_one" in sent[1]
    assert result.transitioned and pair.stored(request).status is RequestStatus.APPROVED
    assert pair.here.resume(request.id).kind is OutcomeKind.EXECUTED
    assert pair.here.store.verify_audit().ok


def test_the_approver_is_read_as_stored_not_as_claimed(pair: Pair) -> None:
    """A bare identity (``decide_once`` passes a name) signs with its stored roles."""
    pair.here.decide(pair.propose(0).id, Decision.approve(), identity=pair.alice)  # warm
    request = pair.propose()
    with round_trips() as counted:
        result = pair.here.decide(request.id, Decision.approve(),
                                  identity=Identity(name="alice"))
    assert result.transitioned
    assert counted[0] == 2  # its stored roles sign: the guard holds, no locked retry
    pair.there.add_user("bob", roles=["dev"])
    other = pair.propose(2)
    with pytest.raises(Forbidden) as caught:
        pair.here.decide(other.id, Decision.approve(), identity=Identity(name="bob",
                                                                          roles=("ops",)))
    assert caught.value.code == "role_missing"
    assert pair.here.store.decisions(other.id) == []


@pytest.mark.parametrize(("change", "code"), [
    ("disable", "identity_disabled"),
    ("roles", "role_missing"),
    ("remove", None),
])
def test_an_approver_changed_after_the_read_is_judged_as_changed(
        pair: Pair, monkeypatch: pytest.MonkeyPatch, change: str, code: str | None) -> None:
    request = pair.propose()
    pair.after_read(monkeypatch, {
        "disable": lambda: pair.there.disable_user("alice"),
        "roles": lambda: pair.there.set_roles("alice", ["dev"]),
        "remove": lambda: pair.there.remove_user("alice")}[change])
    with pytest.raises((Forbidden, Unauthenticated)) as caught:
        pair.here.decide(request.id, Decision.approve(), identity=pair.alice)
    if code is not None:
        assert caught.value.code == code
    assert pair.reads == 1
    assert pair.stored(request).status is RequestStatus.PENDING
    assert pair.here.store.decisions(request.id) == []


def test_a_request_decided_after_the_read_is_not_decided_again(
        pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    bob, _ = pair.there.add_user("bob", roles=["ops"])
    request = pair.propose()
    pair.after_read(monkeypatch, lambda: pair.there.decide(
        request.id, Decision.reject("not now"), identity=bob))
    with pytest.raises(Conflict) as caught:
        pair.here.decide(request.id, Decision.approve(), identity=pair.alice)
    assert caught.value.code == "already_decided"
    assert [d.approver for d in pair.here.store.decisions(request.id)] == ["bob"]
    assert pair.stored(request).status is RequestStatus.REJECTED


def test_a_request_expired_after_the_read_is_late(pair: Pair,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    request = pair.propose()
    later = Gate(pair.there.policy, pair.there.store, clock=lambda: time.time() + 7200)
    pair.after_read(monkeypatch, lambda: later.outcome(request.id))
    with pytest.raises(Expired):
        pair.here.decide(request.id, Decision.approve(), identity=pair.alice)
    assert pair.stored(request).status is RequestStatus.EXPIRED
    assert pair.here.store.decisions(request.id) == []


def test_a_status_moved_behind_the_stores_back_after_the_read_is_seen(
        pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    request = pair.propose()

    def cancel() -> None:
        with raw(pair.here.store) as conn:
            conn.execute("UPDATE requests SET status = 'cancelled' WHERE id = %s",
                         (request.id,))

    pair.after_read(monkeypatch, cancel)
    with pytest.raises(Conflict) as caught:
        pair.here.decide(request.id, Decision.approve(), identity=pair.alice)
    assert caught.value.code == "already_decided"
    assert pair.here.store.decisions(request.id) == []


def test_arguments_rewritten_after_the_read_are_the_ones_decided_on(
        pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    """The version is unchanged by a write behind the store's back: the arguments and their
    hashes are compared themselves, and the decision approves the hash the row holds."""
    request = pair.propose()
    forged = {"command": "make install"}

    def rewrite() -> None:
        with raw(pair.here.store) as conn:
            conn.execute("UPDATE requests SET args = %s, args_hash = %s WHERE id = %s",
                         (canonical_text(forged), args_hash(forged), request.id))

    pair.after_read(monkeypatch, rewrite)
    pair.here.decide(request.id, Decision.approve(), identity=pair.alice)
    [decision] = pair.here.store.decisions(request.id)
    assert decision.args_hash == args_hash(forged) == pair.stored(request).run_hash


def test_an_idempotency_key_taken_after_the_read_is_a_conflict(
        pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = pair.propose(1), pair.propose(2)
    pair.after_read(monkeypatch, lambda: pair.there.decide(
        first.id, Decision.approve(), identity=pair.alice, idempotency_key="k-1"))
    with pytest.raises(Conflict) as caught:
        pair.here.decide(second.id, Decision.approve(), identity=pair.alice,
                         idempotency_key="k-1")
    assert caught.value.code == "idempotency_conflict"
    assert pair.stored(second).status is RequestStatus.PENDING
    assert pair.here.store.decisions(second.id) == []


def test_a_quorum_above_one_is_decided_on_the_locked_row(pair: Pair) -> None:
    bob, _ = pair.there.add_user("bob", roles=["ops"])
    request = pair.propose(command="make release")
    first = pair.here.decide(request.id, Decision.approve(), identity=pair.alice)
    assert (first.approvals, first.transitioned) == (1, False)
    with pytest.raises(Conflict) as caught:
        pair.here.decide(request.id, Decision.approve(), identity=pair.alice)
    assert caught.value.code == "already_voted"
    second = pair.here.decide(request.id, Decision.approve(), identity=bob)
    assert (second.approvals, second.transitioned) == (2, True)


def test_approvers_racing_on_two_servers_move_it_once(pair: Pair) -> None:
    """Half the approvers decide through the server that wrote the request (unread), half
    through the other (read first): one transition, one decision, a whole audit."""
    people = [pair.there.add_user(f"ops-{n}", roles=["ops"])[0] for n in range(8)]
    request = pair.propose()
    start = threading.Barrier(len(people))
    won: list[str] = []
    lost: list[str] = []

    def decide(gate: Gate, person: Identity) -> None:
        start.wait()
        try:
            gate.decide(request.id, Decision.approve(), identity=person)
            won.append(person.name)
        except Conflict as exc:
            lost.append(exc.code)

    threads = [threading.Thread(target=decide, args=(pair.here if n % 2 else pair.there, p))
               for n, p in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and lost == ["already_decided"] * 7
    assert [d.approver for d in pair.here.store.decisions(request.id)] == won
    assert pair.here.store.verify_audit().ok


@pytest.mark.parametrize("request_id", ["req_\x00x", "r" * 8192, ""])
def test_an_id_the_store_refuses_is_refused_before_any_read(
        pair: Pair, monkeypatch: pytest.MonkeyPatch, request_id: str) -> None:
    pair.after_read(monkeypatch, lambda: None)
    with pytest.raises(InvalidInput):
        pair.here.decide(request_id, Decision.approve(), identity=pair.alice)
    assert pair.reads == 0


def test_a_replayed_key_on_the_other_server_answers_the_first_decision(pair: Pair) -> None:
    """The retry reads a row no longer pending: the locked path finds the key's answer."""
    request = pair.propose()
    done = pair.here.decide(request.id, Decision.approve(), identity=pair.alice,
                            idempotency_key="k-1")
    again = pair.here.decide(request.id, Decision.approve(), identity=pair.alice,
                             idempotency_key="k-1")
    assert again.replayed and again.decision_id == done.decision_id
    assert len(pair.here.store.decisions(request.id)) == 1


def test_an_approver_disabled_before_the_read_never_signs(pair: Pair) -> None:
    """The token's identity (remembered, not disabled) is not what signs: the stored one."""
    request = pair.propose()
    pair.there.disable_user("alice")
    with pytest.raises(Forbidden) as caught:
        pair.here.decide(request.id, Decision.approve(), identity=pair.alice)
    assert caught.value.code == "identity_disabled"
    assert pair.here.store.decisions(request.id) == []


def test_an_agent_identity_stored_under_the_name_never_signs(pair: Pair) -> None:
    pair.there.add_user("bot", kind="agent")
    request = pair.propose()
    with pytest.raises(Forbidden) as caught:
        pair.here.decide(request.id, Decision.approve(), identity=Identity(name="bot"))
    assert caught.value.code == "agent_cannot_decide"
    assert pair.here.store.decisions(request.id) == []
