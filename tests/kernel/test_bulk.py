"""Bulk approval (issue 48, item 3), on both backends: one confirmation, each call decided
by itself — its own decision row and audit event, bound to the hash shown — under the
rules of one-by-one decisions; mandatory and passkey asks, changed arguments, unknown ids
and calls of other shapes are refused and reported, and nothing is written for them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bulk_policy import POLICY
from signoff.audit import AuditKind
from signoff.errors import Forbidden, InvalidDecision, InvalidInput
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.model import Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store


class Rig:
    def __init__(self, store: Store) -> None:
        self.now = 1_000_000.0
        self.gate = Gate(Policy.from_toml(POLICY), store, clock=lambda: self.now)
        self.who: dict[str, Identity] = {}
        for name, roles in (("ann", ("ops",)), ("bob", ("ops",)), ("cy", ())):
            _, token = self.gate.add_user(name, roles=roles)
            self.who[name] = self.gate.authenticate(token)
        _, token = self.gate.add_user("bot", kind="agent")
        self.who["bot"] = self.gate.authenticate(token)

    def ask(self, call_id: str, tool: str, thread: str = "t1", principal: str = "bot",
            **args: Any) -> str:
        proposal = self.gate.propose(ToolCall(id=call_id, name=tool, args=args),
                                     RunContext(thread_id=thread, principal=principal))
        assert proposal.request is not None, proposal
        return proposal.request.id

    def shown(self, *ids: str) -> list[tuple[str, str]]:
        return [(i, self.gate.get_request(i).run_hash) for i in ids]

    def status(self, request_id: str) -> str:
        return self.gate.get_request(request_id).status.value


@pytest.fixture
def rig(store: Store) -> Rig:
    return Rig(store)


def test_each_listed_call_is_approved_by_its_own_decision(rig: Rig) -> None:
    ids = [rig.ask(f"c{i}", "execute", command=f"pytest tests/t{i}.py") for i in range(3)]
    result = rig.gate.approve_many(rig.shown(*ids), identity=rig.who["ann"])
    assert result.approved == ids and result.refused == () and result.recorded == []
    assert result.shape is not None and result.shape.describe() == "execute(command): pytest"
    for request_id in ids:
        assert rig.status(request_id) == "approved"
        decision, = rig.gate.decisions(request_id)
        assert (decision.approver, decision.scope.value) == ("ann", "once")
        assert decision.args_hash == rig.gate.get_request(request_id).run_hash
    recorded = [e for e in rig.gate.audit_events()
                if e.kind == AuditKind.DECISION_RECORDED.value]
    assert sorted(e.request_id or "" for e in recorded) == sorted(ids)
    assert {json.loads(e.data)["via"] for e in recorded} == {"bulk"}
    assert rig.gate.verify_audit().ok


def test_a_quorum_gets_one_vote_on_each(rig: Rig) -> None:
    ids = [rig.ask(f"d{i}", "deploy", env=f"e{i}") for i in range(2)]
    first = rig.gate.approve_many(rig.shown(*ids), identity=rig.who["ann"])
    assert first.recorded == ids and first.approved == []
    assert [r.approvals for r in first.decided] == [1, 1]
    again = rig.gate.approve_many(rig.shown(*ids), identity=rig.who["ann"])
    assert [(r.request_id, r.code) for r in again.refused] == [(i, "already_voted")
                                                               for i in ids]
    second = rig.gate.approve_many(rig.shown(*ids), identity=rig.who["bob"])
    assert second.approved == ids


def test_roles_and_self_approval_hold_per_call(rig: Rig) -> None:
    deploy = rig.ask("d1", "deploy", env="prod")
    refused = rig.gate.approve_many(rig.shown(deploy), identity=rig.who["cy"])
    assert [(r.request_id, r.code) for r in refused.refused] == [(deploy, "role_missing")]
    own = rig.ask("c1", "execute", principal="ann", command="make a")
    other = rig.ask("c2", "execute", thread="t2", command="make b")
    result = rig.gate.approve_many(rig.shown(own, other), identity=rig.who["ann"])
    assert result.approved == [other]
    assert [(r.request_id, r.code) for r in result.refused] == [(own, "self_approval")]
    assert rig.gate.decisions(own) == [] and rig.status(own) == "pending"
    with pytest.raises(Forbidden) as agent:
        rig.gate.approve_many(rig.shown(own), identity=rig.who["bot"])
    assert agent.value.code == "agent_cannot_decide"


def test_mandatory_passkey_changed_unknown_and_expired_are_refused(rig: Rig) -> None:
    plain = rig.ask("c1", "execute", command="make x")
    refund = rig.ask("r1", "refund", amount="5")
    sign = rig.ask("s1", "sign", doc="a")
    changed = rig.ask("c2", "execute", command="make y")
    rig.gate.decide(changed, Decision.edit({"command": "make z"}), identity=rig.who["bob"])
    late = rig.ask("c3", "execute", command="make w")
    listed = [*rig.shown(plain, refund, sign), (changed, "sha256:" + "0" * 64),
              ("req_unknown", "sha256:" + "1" * 64)]
    result = rig.gate.approve_many(listed[:1] + listed[3:], identity=rig.who["ann"])
    assert result.approved == [plain]
    assert [(r.request_id, r.code) for r in result.refused] == [
        (changed, "args_changed"), ("req_unknown", "not_found")]
    # mandatory and passkey asks are refused even when forged into a list (each is alone
    # in its shape, so one at a time)
    for request_id, code in ((refund, "mandatory"), (sign, "passkey_required")):
        alone = rig.gate.approve_many(rig.shown(request_id), identity=rig.who["ann"])
        assert [(r.request_id, r.code) for r in alone.refused] == [(request_id, code)]
        assert rig.gate.decisions(request_id) == [] and rig.status(request_id) == "pending"
    rig.now += 7200  # past the policy's hour
    expired = rig.gate.approve_many(rig.shown(late), identity=rig.who["ann"])
    assert [(r.request_id, r.code) for r in expired.refused] == [(late, "expired")]


def test_the_hash_is_checked_under_the_lock_too(rig: Rig,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    request_id = rig.ask("d1", "deploy", env="prod")
    shown = rig.shown(request_id)
    original = rig.gate.bulk.store.get_request

    def edited_meanwhile(rid: str) -> Any:
        """Read as the confirmation showed it; then bob's edit (one vote of two) lands."""
        found = original(rid)
        monkeypatch.setattr(rig.gate.bulk, "store", rig.gate.store)
        rig.gate.decide(rid, Decision.edit({"env": "evil"}), identity=rig.who["bob"])
        return found

    class Store:
        get_request = staticmethod(edited_meanwhile)

    monkeypatch.setattr(rig.gate.bulk, "store", Store())
    result = rig.gate.approve_many(shown, identity=rig.who["ann"])
    assert [(r.request_id, r.code) for r in result.refused] == [(request_id, "args_changed")]
    assert [d.approver for d in rig.gate.decisions(request_id)] == ["bob"]
    assert rig.status(request_id) == "pending"


def test_shapes_must_agree_and_bad_lists_write_nothing(rig: Rig) -> None:
    git = rig.ask("c1", "execute", command="git status")
    push = rig.ask("c2", "execute", command="git push")
    deploy = rig.ask("d1", "deploy", env="prod")
    assert rig.gate.shape_of(rig.gate.get_request(git)) != \
        rig.gate.shape_of(rig.gate.get_request(push))
    assert rig.gate.shape_of(rig.gate.get_request(deploy)).describe() == "deploy(env)"
    head = list(rig.gate.audit_events())[-1].index  # sealed first
    for listed, error, code in (
            (rig.shown(git, push), InvalidDecision, "mixed_shapes"),
            ([], InvalidInput, "nothing_listed"),
            (rig.shown(git, git), InvalidInput, "duplicate_listed"),
            ([(git, "md5:x")], InvalidInput, "invalid_args_hash"),
            ([("a b", "sha256:" + "0" * 64)], InvalidInput, "invalid_identifier"),
            ([(f"r{i}", "sha256:" + "0" * 64) for i in range(101)], InvalidInput,
             "too_many_listed")):
        with pytest.raises(error) as caught:
            rig.gate.approve_many(listed, identity=rig.who["ann"])
        assert caught.value.code == code, listed
    assert [e.kind for e in rig.gate.audit_events(after=head)] == []
    assert {rig.status(i) for i in (git, push, deploy)} == {RequestStatus.PENDING.value}
