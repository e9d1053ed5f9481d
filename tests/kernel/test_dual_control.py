"""Dual control (issue 13, item 9: "business owner + ops owner"), on both backends.

A rule's ``requires`` asks for approvals from several roles at once, each with its count;
each approver fills one seat, so one person holding both roles is not two people. The
quorum is checked again before the call runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff.errors import Conflict, Forbidden, PolicyError
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind
from signoff.kernel.quorum import met
from signoff.model import Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store

POLICY = """
[policy]
version = "dual-1"
gated = ["deploy", "refund"]
[tools.deploy]
[tools.refund]

[[rules]]
id = "prod-deploy"
effect = "ask"
tool = "deploy"
args = { env = "prod" }
requires = [{ role = "business-owner" }, { role = "ops-owner" }]

[[rules]]
id = "big-refund"
effect = "ask"
tool = "refund"
requires = [{ role = "finance", approvals = 2 }, { role = "ops-owner" }]

[[rules]]
id = "any-ops"
effect = "ask"
tool = "deploy"
roles = ["ops-owner"]
"""


def _gate(store: Store) -> tuple[Gate, dict[str, Identity]]:
    gate = Gate(Policy.from_toml(POLICY), store)
    people = {"biz": ("business-owner",), "biz2": ("business-owner",), "ops": ("ops-owner",),
              "both": ("business-owner", "ops-owner"), "fin1": ("finance",),
              "fin2": ("finance",)}
    who = {}
    for name, roles in people.items():
        _, token = gate.add_user(name, roles=roles)
        who[name] = gate.authenticate(token)
    ran: list[str] = []

    @gate.tool()
    def deploy(env: str) -> str:
        ran.append(env)
        return env

    gate.ran = ran  # type: ignore[attr-defined]
    return gate, who


def _ask(gate: Gate, call_id: str, tool: str = "deploy", **args: str) -> str:
    proposal = gate.propose(ToolCall(id=call_id, name=tool, args=args or {"env": "prod"}),
                            RunContext(thread_id="t", run_id="r"))
    assert proposal.request is not None
    return proposal.request.id


def test_both_roles_must_approve(store: Store) -> None:
    gate, who = _gate(store)
    request_id = _ask(gate, "c1")
    request = gate.get_request(request_id)
    assert request.requires == (("business-owner", 1), ("ops-owner", 1))
    assert set(request.roles) == {"business-owner", "ops-owner"}
    assert request.approvals_required == 2
    first = gate.decide(request_id, Decision.approve(), identity=who["biz"])
    assert first.request.status is RequestStatus.PENDING
    with pytest.raises(Conflict) as again:
        gate.decide(request_id, Decision.approve(), identity=who["biz"])
    assert again.value.code == "already_voted"
    # Two business owners are not business + ops.
    second = gate.decide(request_id, Decision.approve(), identity=who["biz2"])
    assert second.request.status is RequestStatus.PENDING
    third = gate.decide(request_id, Decision.approve(), identity=who["ops"])
    assert third.request.status is RequestStatus.APPROVED
    assert gate.resume(request_id).kind is OutcomeKind.EXECUTED
    assert gate.ran == ["prod"]  # type: ignore[attr-defined]


def test_one_person_with_both_roles_is_one_approver(store: Store) -> None:
    gate, who = _gate(store)
    request_id = _ask(gate, "c2")
    assert gate.decide(request_id, Decision.approve(),
                       identity=who["both"]).request.status is RequestStatus.PENDING
    # ...and with an ops owner beside them the seats fill (both takes business).
    assert gate.decide(request_id, Decision.approve(),
                       identity=who["ops"]).request.status is RequestStatus.APPROVED


def test_counts_per_role(store: Store) -> None:
    gate, who = _gate(store)
    request_id = _ask(gate, "r1", tool="refund", amount="9000")
    for name in ("fin1", "ops"):
        assert gate.decide(request_id, Decision.approve(),
                           identity=who[name]).request.status is RequestStatus.PENDING
    with pytest.raises(Forbidden):  # a business owner holds none of the roles asked
        gate.decide(request_id, Decision.approve(), identity=who["biz"])
    assert gate.decide(request_id, Decision.approve(),
                       identity=who["fin2"]).request.status is RequestStatus.APPROVED


def test_a_lost_role_before_the_run_invalidates(store: Store) -> None:
    gate, who = _gate(store)
    request_id = _ask(gate, "c3")
    gate.decide(request_id, Decision.approve(), identity=who["biz"])
    gate.decide(request_id, Decision.approve(), identity=who["ops"])
    gate.set_roles("ops", ("business-owner",), actor="admin")  # still a role of the request
    outcome = gate.resume(request_id)
    assert outcome.kind is OutcomeKind.INVALIDATED
    assert outcome.code == "approver_lost_role"
    assert gate.ran == []  # type: ignore[attr-defined]


def test_the_matching_is_a_real_matching() -> None:
    a = Identity(name="a", roles=("x", "y"))
    b = Identity(name="b", roles=("x",))
    # Greedy would seat a on x and leave y empty; a matching seats b on x, a on y.
    assert met((("x", 1), ("y", 1)), [a, b])
    assert not met((("x", 1), ("y", 1)), [b, Identity(name="c", roles=("x",))])
    assert not met((("x", 2),), [a])


@pytest.mark.parametrize("rule, message", [
    ('requires = [{ role = "a" }]\nroles = ["b"]', "drop roles and approvals"),
    ("requires = []", "non-empty"),
    ('requires = [{ role = "a" }, { role = "a" }]', "named twice"),
    ('requires = [{ role = "a", approvals = 0 }]', "from 1 to 100"),
    ('requires = [{ role = "a", count = 2 }]', "count"),
    ('requires = ["a"]', "must be a table"),
])
def test_bad_requires_are_typed_errors(rule: str, message: str, tmp_path: Path) -> None:
    text = f'[policy]\nversion = "x"\n[tools.t]\n[[rules]]\nid = "r"\neffect = "ask"\n' \
           f'tool = "t"\n{rule}\n'
    with pytest.raises(PolicyError) as bad:
        Policy.from_toml(text)
    assert message in str(bad.value)
