"""A decision binds to the arguments its approver was shown (``Decision.expected_args_hash``).

An edit moves the arguments that would run; a decision made on a view of the old ones
is refused with ``args_changed`` and carries what would run now, on both backends and
on every path a decision takes (the locked one and PostgreSQL's unread one).
"""

from __future__ import annotations

import pytest
from test_decisions import Kit

from signoff.canonical import args_hash, canonical_text
from signoff.errors import ArgsChanged
from signoff.kernel.outcomes import OutcomeKind
from signoff.model import Decision, RequestStatus
from signoff.policy import Policy
from signoff.store.base import Store


@pytest.fixture
def kit(policy: Policy, store: Store) -> Kit:
    return Kit(policy, store)


def test_approving_what_was_shown_counts(kit: Kit) -> None:
    rid = kit.pending()
    shown = kit.request(rid).args_hash
    result = kit.gate.decide(rid, Decision.approve(expected_args_hash=shown), identity=kit.alice)
    assert result.request.status is RequestStatus.APPROVED
    assert kit.gate.resume(rid).kind is OutcomeKind.EXECUTED


def test_a_vote_on_the_arguments_before_an_edit_is_refused(kit: Kit) -> None:
    rid = kit.pending("deploy", {"service": "staging"})
    shown = kit.request(rid).args_hash  # what bob's notification showed
    kit.gate.decide(rid, Decision.edit({"service": "prod"}), identity=kit.alice)
    with pytest.raises(ArgsChanged) as caught:
        kit.gate.decide(rid, Decision.approve(expected_args_hash=shown), identity=kit.bob)
    error = caught.value
    assert error.code == "args_changed" and error.http_status == 409
    assert error.args_hash == args_hash({"service": "prod"})
    assert error.current_args == canonical_text({"service": "prod"})
    assert error.to_dict()["args"] == canonical_text({"service": "prod"})
    request = kit.request(rid)
    assert request.status is RequestStatus.PENDING
    assert [d.approver for d in kit.store.decisions(rid)] == ["alice"]  # nothing written
    assert kit.ledger == []
    # Shown the new arguments, bob's vote on them counts.
    done = kit.gate.decide(rid, Decision.approve(expected_args_hash=error.args_hash),
                           identity=kit.bob)
    assert done.request.status is RequestStatus.APPROVED
    assert kit.gate.resume(rid).result == {"deployed": "prod"}


@pytest.mark.parametrize("decision", [
    lambda h: Decision.approve(expected_args_hash=h),
    lambda h: Decision.reject("no", expected_args_hash=h),
    lambda h: Decision.respond("use pwd", expected_args_hash=h),
    lambda h: Decision.edit({"command": "ls"}, expected_args_hash=h),
    lambda h: Decision.approve(scope="thread", expected_args_hash=h),
], ids=["approve", "reject", "respond", "edit", "thread"])
def test_every_kind_of_decision_on_a_stale_view_is_refused(kit: Kit, decision) -> None:  # type: ignore[no-untyped-def]
    rid = kit.pending()
    with pytest.raises(ArgsChanged):
        kit.gate.decide(rid, decision("sha256:" + "0" * 64), identity=kit.alice)
    assert kit.request(rid).status is RequestStatus.PENDING
    assert kit.store.decisions(rid) == []
    assert kit.store.grants_for(thread_id="t-1", session_id=None, tool="execute") == []


def test_an_edit_made_by_another_gate_is_seen(kit: Kit) -> None:
    """A second gate on the same store (another server) edits; this one's approval on the
    old view is refused, though this gate wrote the request and remembers it as it was."""
    from signoff.kernel.gate import Gate

    rid = kit.pending("deploy", {"service": "api"})  # two approvals
    shown = kit.request(rid).args_hash
    other = Gate(kit.gate.policy, kit.store, clock=kit.clock, agent="agent-bot", lease=60.0)
    other.decide(rid, Decision.edit({"service": "api-canary"}), identity=kit.bob)
    with pytest.raises(ArgsChanged):
        kit.gate.decide(rid, Decision.approve(expected_args_hash=shown), identity=kit.alice)


def test_the_key_of_a_refused_decision_can_be_used_again(kit: Kit) -> None:
    rid = kit.pending()
    with pytest.raises(ArgsChanged):
        kit.gate.decide(rid, Decision.approve(expected_args_hash="sha256:" + "1" * 64),
                        identity=kit.alice, idempotency_key="k-1")
    result = kit.gate.decide(rid, Decision.approve(expected_args_hash=kit.request(rid).args_hash),
                             identity=kit.alice, idempotency_key="k-1")
    assert result.request.status is RequestStatus.APPROVED and not result.replayed


def test_decide_once_records_the_refusal(kit: Kit) -> None:
    rid = kit.pending()
    once = kit.gate.decide_once(rid, Decision.approve(expected_args_hash="sha256:" + "2" * 64),
                                user="alice", key="resume-1", via="test")
    assert once.code == "args_changed" and once.result is None
    assert "decision.refused" in kit.kinds(rid)
    assert kit.request(rid).status is RequestStatus.PENDING


def test_a_hash_spelled_differently_never_matches(kit: Kit) -> None:
    """The shown hash with a trailing newline, in capitals or with NUL/8 KB is not the
    hash: refused (args_changed or a typed input error), and nothing is written."""
    from signoff.errors import InvalidInput

    rid = kit.pending()
    shown = kit.request(rid).args_hash
    for spelled in (shown + "\n", shown.upper(), " " + shown):
        with pytest.raises(ArgsChanged):
            kit.gate.decide(rid, Decision.approve(expected_args_hash=spelled), identity=kit.alice)
    for bad in ("\x00", "a" * 8192):
        with pytest.raises(InvalidInput):
            Decision.approve(expected_args_hash=bad)
    assert kit.store.decisions(rid) == []
    assert kit.request(rid).status is RequestStatus.PENDING
