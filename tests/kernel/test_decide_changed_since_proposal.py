"""A request or approver changed since this process proposed it is decided as under the
row's lock: a decision on PostgreSQL on a request this process proposed goes without
reading it, and that shortcut must never give another answer.

The gate keeps the requests it wrote (``signoff.kernel.written_requests``); a decision on one is one
statement whose compare-and-set requires the row at that version, still pending, with
those arguments, and the approver stored as they sign (``Tx.expect_as_known``). Each case
here changes one of those through a second store on the same database — another process,
or a write behind the store's back — between the proposal and the decision, and checks
that the decision is what a decision on the row read under its lock gives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backdoor import raw
from kit import OPS_POLICY, round_trips, twin_store
from signoff.canonical import args_hash, canonical_text
from signoff.errors import Conflict, Expired, Forbidden, Unauthenticated
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind
from signoff.model import ApprovalRequest, Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store

POLICY = OPS_POLICY.replace("{version}", "known-1")


class Two:
    def __init__(self, here: Gate, there: Gate, alice: Identity, late: list[float]) -> None:
        self.here, self.there, self.alice = here, there, alice
        self.ran: list[str] = []
        self.late = late  # seconds this process's clock runs ahead

    def propose(self, n: int = 1, command: str = "make build") -> ApprovalRequest:
        proposal = self.here.propose(ToolCall(id=f"c-{n}", name="execute",
                                              args={"command": command}),
                                     RunContext(thread_id=f"t-{n}"))
        assert proposal.request is not None
        assert proposal.request.id in self.here.written._rows  # written here: known
        return proposal.request

    def stored(self, request: ApprovalRequest) -> ApprovalRequest:
        row = self.here.store.get_request(request.id)
        assert row is not None
        return row


@pytest.fixture
def two(postgres_store: Store, workspace: Path) -> Iterator[Two]:
    """The proposing gate, and another process's gate on the same database."""
    policy = Policy.from_toml(POLICY.format(root=workspace), source="known.toml")
    other_store = twin_store(postgres_store)
    try:
        late = [0.0]
        here = Gate(policy, postgres_store, clock=lambda: time.time() + late[0])
        there = Gate(policy, other_store)
        alice, _ = there.add_user("alice", roles=["ops"])
        pair = Two(here, there, alice, late)
        for gate in (here, there):
            @gate.tool(name="execute")
            def execute(command: str) -> str:
                pair.ran.append(command)
                return f"ran {command}"
        yield pair
    finally:
        other_store.close()


def test_a_decision_on_a_request_proposed_here_is_one_round_trip(two: Two) -> None:
    two.here.decide(two.propose(0).id, Decision.approve(), identity=two.alice)  # warm
    request = two.propose()
    with round_trips() as counted:
        result = two.here.decide(request.id, Decision.approve(), identity=two.alice)
    assert counted[0] == 1
    assert result.transitioned and result.request.status is RequestStatus.APPROVED
    assert two.stored(request).status is RequestStatus.APPROVED
    assert request.id not in two.here.written._rows  # used once
    assert two.here.resume(request.id).kind is OutcomeKind.EXECUTED
    assert two.ran == ["make build"]
    assert two.here.store.verify_audit().ok


def test_a_request_needing_two_approvals_counts_both(two: Two) -> None:
    """A quorum above one reads the decisions so far: it is decided on the locked row."""
    bob, _ = two.there.add_user("bob", roles=["ops"])
    request = two.propose(command="make release")
    assert request.approvals_required == 2
    first = two.here.decide(request.id, Decision.approve(), identity=two.alice)
    assert (first.approvals, first.transitioned) == (1, False)
    with pytest.raises(Conflict):
        two.here.decide(request.id, Decision.approve(), identity=two.alice)
    second = two.here.decide(request.id, Decision.approve(), identity=bob)
    assert (second.approvals, second.transitioned) == (2, True)
    assert sorted(d.approver for d in two.here.store.decisions(request.id)) == ["alice", "bob"]


def test_an_approver_disabled_elsewhere_is_refused(two: Two) -> None:
    request = two.propose()
    two.there.disable_user("alice")
    with pytest.raises(Forbidden) as caught:
        two.here.decide(request.id, Decision.approve(), identity=two.alice)
    assert caught.value.code == "identity_disabled"
    assert two.stored(request).status is RequestStatus.PENDING
    assert two.here.store.decisions(request.id) == []


def test_an_approver_stripped_of_the_role_elsewhere_is_refused(two: Two) -> None:
    request = two.propose()
    two.there.set_roles("alice", ["dev"])
    with pytest.raises(Forbidden) as caught:
        two.here.decide(request.id, Decision.approve(), identity=two.alice)
    assert caught.value.code == "role_missing"
    assert two.here.store.decisions(request.id) == []


def test_an_approver_removed_elsewhere_is_refused(two: Two) -> None:
    request = two.propose()
    two.there.remove_user("alice")
    with pytest.raises((Unauthenticated, Forbidden)):
        two.here.decide(request.id, Decision.approve(), identity=two.alice)
    assert two.stored(request).status is RequestStatus.PENDING
    assert two.here.store.decisions(request.id) == []


def test_a_role_the_database_does_not_give_is_not_taken_from_the_caller(two: Two) -> None:
    """An identity claiming a role it is not stored with decides nothing."""
    two.there.add_user("bob", roles=["dev"])
    request = two.propose()
    claimed = Identity(name="bob", roles=("ops",))
    with pytest.raises(Forbidden) as caught:
        two.here.decide(request.id, Decision.approve(), identity=claimed)
    assert caught.value.code == "role_missing"
    assert two.here.store.decisions(request.id) == []


def test_a_request_decided_elsewhere_is_not_decided_again(two: Two) -> None:
    bob, _ = two.there.add_user("bob", roles=["ops"])
    request = two.propose()
    two.there.decide(request.id, Decision.reject("not now"), identity=bob)
    with pytest.raises(Conflict) as caught:
        two.here.decide(request.id, Decision.approve(), identity=two.alice)
    assert caught.value.code == "already_decided"
    assert [d.approver for d in two.here.store.decisions(request.id)] == ["bob"]
    assert two.stored(request).status is RequestStatus.REJECTED


def test_a_request_expired_elsewhere_is_late(two: Two) -> None:
    request = two.propose()
    later = Gate(two.there.policy, two.there.store, clock=lambda: time.time() + 7200)
    assert later.outcome(request.id).kind is OutcomeKind.EXPIRED
    with pytest.raises(Expired):
        two.here.decide(request.id, Decision.approve(), identity=two.alice)
    assert two.here.store.decisions(request.id) == []


def test_a_request_past_its_expiry_is_expired_not_approved(two: Two) -> None:
    """Nobody has recorded the expiry yet: the row is as proposed, but the clock judges."""
    request = two.propose()
    two.late[0] = 7200.0
    with pytest.raises(Expired):
        two.here.decide(request.id, Decision.approve(), identity=two.alice)
    assert two.stored(request).status is RequestStatus.EXPIRED
    assert two.here.store.decisions(request.id) == []


def test_a_status_moved_behind_the_stores_back_is_seen(two: Two) -> None:
    request = two.propose()
    with raw(two.here.store) as conn:
        conn.execute("UPDATE requests SET status = 'cancelled' WHERE id = %s", (request.id,))
    with pytest.raises(Conflict) as caught:
        two.here.decide(request.id, Decision.approve(), identity=two.alice)
    assert caught.value.code == "already_decided"
    assert two.here.store.decisions(request.id) == []


def test_arguments_rewritten_behind_the_stores_back_are_the_ones_decided_on(two: Two) -> None:
    """The decision approves the hash the row holds, as a decision on the locked row does:
    never the hash this process remembers."""
    request = two.propose()
    forged = {"command": "make install"}
    with raw(two.here.store) as conn:
        conn.execute("UPDATE requests SET args = %s, args_hash = %s WHERE id = %s",
                     (canonical_text(forged), args_hash(forged), request.id))
    two.here.decide(request.id, Decision.approve(), identity=two.alice)
    [decision] = two.here.store.decisions(request.id)
    assert decision.args_hash == args_hash(forged) == two.stored(request).run_hash


def test_an_idempotency_key_used_for_another_request_is_a_conflict(two: Two) -> None:
    first, second = two.propose(1), two.propose(2)
    done = two.here.decide(first.id, Decision.approve(), identity=two.alice,
                           idempotency_key="k-1")
    again = two.here.decide(first.id, Decision.approve(), identity=two.alice,
                            idempotency_key="k-1")
    assert again.replayed and again.decision_id == done.decision_id
    with pytest.raises(Conflict) as caught:
        two.here.decide(second.id, Decision.approve(), identity=two.alice,
                        idempotency_key="k-1")
    assert caught.value.code == "idempotency_conflict"
    assert two.stored(second).status is RequestStatus.PENDING
    assert two.here.store.decisions(second.id) == []


def test_the_asker_cannot_decide_a_request_it_asked_for(two: Two) -> None:
    two.there.add_user("agent", roles=["ops"])  # the gate's agent name, as a human
    request = two.propose()
    with pytest.raises(Forbidden) as caught:
        two.here.decide(request.id, Decision.approve(), identity=Identity(name="agent",
                                                                          roles=("ops",)))
    assert caught.value.code == "self_approval"
    assert two.here.store.decisions(request.id) == []


def test_a_party_of_the_thread_cannot_grant_it(two: Two) -> None:
    """A thread-wide approval reads who asks on the thread: decided on the locked row."""
    theirs = two.there.propose(ToolCall(id="c-a", name="execute", args={"command": "make a"}),
                               RunContext(thread_id="t-1", principal="alice"))
    assert theirs.request is not None
    request = two.propose()  # the same thread, another asker
    with pytest.raises(Forbidden) as caught:
        two.here.decide(request.id, Decision.approve(scope="thread"), identity=two.alice)
    assert caught.value.code == "self_approval"
    assert two.here.store.decisions(request.id) == []
    assert two.here.decide(request.id, Decision.approve(), identity=two.alice).transitioned


def test_approvers_racing_in_this_process_move_it_once(two: Two) -> None:
    names = [f"ops-{n}" for n in range(8)]
    people = [two.there.add_user(name, roles=["ops"])[0] for name in names]
    request = two.propose()
    start = threading.Barrier(len(people))
    won: list[str] = []
    lost: list[str] = []

    def decide(person: Identity) -> None:
        start.wait()
        try:
            two.here.decide(request.id, Decision.approve(), identity=person)
            won.append(person.name)
        except Conflict as exc:
            lost.append(exc.code)

    threads = [threading.Thread(target=decide, args=(p,)) for p in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and lost == ["already_decided"] * 7
    assert [d.approver for d in two.here.store.decisions(request.id)] == won
    assert two.here.store.verify_audit().ok
