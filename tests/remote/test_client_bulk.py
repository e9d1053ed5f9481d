"""``Client.approve_many`` answers as ``Gate.approve_many`` does: one bulk scenario run on
the in-process gate and on a ``Client`` of a real server over the same gate, on both
backends, gives the same ``BulkResult`` (a ``Shape``, each ``DecisionResult`` with its
``ApprovalRequest``, each refusal with its code) and the same typed errors, writing
nothing for a listing refused whole."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from bulk_policy import POLICY, add_people
from signoff import errors
from signoff.identity import Identity
from signoff.kernel.bulk import BulkResult, Shape
from signoff.kernel.deciding import DecisionResult
from signoff.kernel.gate import Gate
from signoff.model import ApprovalRequest, Decision, RunContext, ToolCall
from signoff.policy import Policy
from signoff.remote import Client
from signoff.server import create_app
from signoff.server.running import ServerThread
from signoff.server.settings import ServerSettings
from signoff.store.base import Store

ZERO = "sha256:" + "0" * 64
Approve = Callable[[Sequence[tuple[str, str]]], BulkResult]


@dataclass
class Rig:
    gate: Gate
    identities: dict[str, Identity]
    tokens: dict[str, str]
    url: str


@pytest.fixture
def rig(store: Store) -> Iterator[Rig]:
    gate = Gate(Policy.from_toml(POLICY, source="bulk.toml"), store)
    tokens = add_people(gate)
    identities = {name: gate.authenticate(token) for name, token in tokens.items()}
    server = ServerThread(create_app(gate, ServerSettings(), feed_poll=0.2)).start()
    try:
        yield Rig(gate, identities, tokens, server.url)
    finally:
        server.stop()


class Scenario:
    """The scenario, approving through ``approve[name]``; every request it proposes is
    named by a label, so that two runs (other ids) compare."""

    def __init__(self, rig: Rig, approve: dict[str, Approve], prefix: str) -> None:
        self.gate = rig.gate
        self.approve = approve
        self.prefix = prefix
        self.labels: dict[str, str] = {}
        self.identities = rig.identities

    def ask(self, label: str, tool: str, *, principal: str = "bot", **args: Any) -> str:
        thread = f"{self.prefix}-{'own' if principal != 'bot' else 'bulk'}"
        proposal = self.gate.propose(
            ToolCall(id=f"{self.prefix}-{label}", name=tool, args=args),
            RunContext(thread_id=thread, principal=principal))
        assert proposal.request is not None, proposal
        self.labels[proposal.request.id] = label
        return proposal.request.id

    def shown(self, *ids: str) -> list[tuple[str, str]]:
        return [(i, self.gate.get_request(i).run_hash) for i in ids]

    def result(self, who: str, listed: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """The result, its types checked, with labels for ids."""
        result = self.approve[who](listed)
        assert type(result) is BulkResult
        assert result.shape is None or type(result.shape) is Shape
        shown = dict(listed)
        for decided in result.decided:
            assert type(decided) is DecisionResult
            assert type(decided.request) is ApprovalRequest
            stored = self.gate.get_request(decided.request.id)
            assert decided.request.run_hash == shown[decided.request.id] == stored.run_hash
            assert decided.request.status is stored.status
        label = self.labels.get
        return {"shape": result.shape,
                "approved": [label(i) for i in result.approved],
                "recorded": [label(i) for i in result.recorded],
                "decided": [(label(r.request.id), r.request.status.value, r.approvals,
                             r.required, r.transitioned, r.replayed) for r in result.decided],
                "refused": [(label(r.request_id, r.request_id), r.code)
                            for r in result.refused]}

    def refused_whole(self, who: str, listed: Sequence[tuple[str, str]]) -> tuple[str, str]:
        """The error of a listing refused whole, having written nothing."""
        head = list(self.gate.audit_events())[-1].index  # sealed: PostgreSQL seals later
        with pytest.raises(errors.SignoffError) as refused:
            self.approve[who](listed)
        assert list(self.gate.audit_events(after=head)) == []
        return type(refused.value).__name__, refused.value.code

    def run(self) -> list[Any]:
        """What every step answered."""
        said: list[Any] = []
        tests = [self.ask(f"t{i}", "execute", command=f"pytest tests/t{i}.py")
                 for i in range(3)]
        own = self.ask("own", "execute", principal="ann", command="pytest mine.py")
        refund = self.ask("refund", "refund", amount="5")
        sign = self.ask("sign", "sign", doc="a")
        listed = [*self.shown(*tests, own), ("req_gone", ZERO)]
        late = self.ask("late", "execute", command="pytest tests/late.py")  # not listed
        said.append(self.result("ann", listed))
        for alone in (refund, sign):  # mandatory and passkey asks, forged into a listing
            said.append(self.result("ann", self.shown(alone)))
        assert self.gate.decisions(refund) == [] == self.gate.decisions(sign)
        assert self.gate.get_request(late).status.value == "pending"

        deploys = [self.ask(f"d{i}", "deploy", env=f"e{i}") for i in range(3)]
        shown = self.shown(*deploys)
        said.append(self.result("cy", shown))  # no ops role
        self.gate.decide(deploys[2], Decision.edit({"env": "elsewhere"}),
                         identity=self.identities["bob"])  # one vote, a new hash
        said.append(self.result("ann", shown))  # a vote on each; the edited one refused
        said.append(self.result("ann", shown[:2]))  # already voted
        said.append(self.result("bob", shown[:2]))  # the second vote: approved

        git = self.ask("git", "execute", command="git status")
        push = self.ask("push", "execute", command="git push")
        for who, bad in (
                ("ann", self.shown(git, push)),
                ("ann", []),
                ("ann", self.shown(git, git)),
                ("ann", [(f"req_{i}", ZERO) for i in range(101)]),
                ("ann", [(git, "md5:x")]),
                ("ann", [(git, "sha256:" + "0" * 100)]),
                ("ann", [("a b", ZERO)]),
                ("bot", self.shown(git))):
            said.append(self.refused_whole(who, bad))
        assert {self.gate.get_request(i).status.value for i in (git, push)} == {"pending"}
        return said


def _gate_side(rig: Rig) -> dict[str, Approve]:
    def as_(name: str) -> Approve:
        return lambda listed: rig.gate.approve_many(listed, identity=rig.identities[name])

    return {name: as_(name) for name in rig.identities}


def test_the_client_answers_a_bulk_approval_as_the_gate(rig: Rig) -> None:
    in_process = Scenario(rig, _gate_side(rig), "g").run()
    clients = {name: Client(rig.url, token) for name, token in rig.tokens.items()}
    try:
        remote = Scenario(rig, {name: c.approve_many for name, c in clients.items()},
                          "c").run()
    finally:
        for client in clients.values():
            client.close()
    assert remote == in_process
    # and what both said is what the rules say
    pytest_shape = Shape("execute", ("command",), ("pytest",))
    deploy_shape = Shape("deploy", ("env",))
    assert in_process[:3] == [
        {"shape": pytest_shape, "approved": ["t0", "t1", "t2"], "recorded": [],
         "decided": [(f"t{i}", "approved", 1, 1, True, False) for i in range(3)],
         "refused": [("own", "self_approval"), ("req_gone", "not_found")]},
        {"shape": None, "approved": [], "recorded": [], "decided": [],
         "refused": [("refund", "mandatory")]},
        {"shape": None, "approved": [], "recorded": [], "decided": [],
         "refused": [("sign", "passkey_required")]}]
    assert in_process[3]["refused"] == [(f"d{i}", "role_missing") for i in range(3)]
    assert in_process[4] == {
        "shape": deploy_shape, "approved": [], "recorded": ["d0", "d1"],
        "decided": [(f"d{i}", "pending", 1, 2, False, False) for i in range(2)],
        "refused": [("d2", "args_changed")]}
    assert in_process[5]["refused"] == [("d0", "already_voted"), ("d1", "already_voted")]
    assert in_process[6]["approved"] == ["d0", "d1"]
    assert in_process[7:] == [
        ("InvalidDecision", "mixed_shapes"), ("InvalidInput", "nothing_listed"),
        ("InvalidInput", "duplicate_listed"), ("InvalidInput", "too_many_listed"),
        ("InvalidInput", "invalid_args_hash"), ("InvalidInput", "invalid_args_hash"),
        ("InvalidInput", "invalid_identifier"), ("Forbidden", "agent_cannot_decide")]
