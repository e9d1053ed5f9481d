"""A thread's mode never carries more authority than its setter (issue 42, item 3), on both
backends.

In ``auto`` and ``full``, a call needing a role the setter lacks (as stored when the call is
judged), a quorum above one or dual control still asks a human, with a reason that says
why; a setter who cannot sign in lends nothing; a mode set by trusted code keeps its old
reach. Only admins and ``[review] full_mode_role`` may set ``full``.
"""

from __future__ import annotations

import itertools

import pytest

from signoff.errors import Forbidden
from signoff.identity import IdentityKind
from signoff.kernel.gate import Gate
from signoff.model import Effect, RunContext, ToolCall, Verdict
from signoff.policy import Policy
from signoff.store.base import Store

POLICY = """
[policy]
version = "modes-1"
gated = ["note", "restart", "deploy", "rotate"]
ceiling = "full"
[review]
{review}
[tools.note]
[tools.restart]
[tools.deploy]
[tools.rotate]

[[rules]]
id = "restart-ops"
effect = "ask"
tool = "restart"
roles = ["ops"]

[[rules]]
id = "deploy-two"
effect = "ask"
tool = "deploy"
approvals = 2

[[rules]]
id = "rotate-dual"
effect = "ask"
tool = "rotate"
requires = [{role = "ops", approvals = 1}, {role = "security", approvals = 1}]
"""

_IDS = itertools.count()
CALLS = {"restart": {"service": "web"}, "deploy": {"env": "staging"},
         "rotate": {"key": "k1"}, "note": {"text": "hello"}}


def _gate(store: Store, review: str = "") -> Gate:
    gate = Gate(Policy.from_toml(POLICY.replace("{review}", review)), store)
    gate.add_user("rita")  # an approver with no roles
    gate.add_user("olga", roles=("ops",))
    gate.add_user("lena", roles=("lead",))
    gate.add_user("adam", kind=IdentityKind.ADMIN)
    return gate


def _verdicts(gate: Gate, thread: str) -> dict[str, Verdict]:
    """Each call proposed in ``thread`` (a fresh run, asked by nobody who set a mode)."""
    out = {}
    for tool, args in CALLS.items():
        n = next(_IDS)
        proposal = gate.propose(ToolCall(id=f"{tool}-{n}", name=tool, args=args),
                                RunContext(thread_id=thread, run_id=f"run-{n}"))
        out[tool] = proposal.verdict
    return out


def _codes(verdict: Verdict) -> set[str]:
    return {r.code for r in verdict.reasons if r.code}


def _asks(verdict: Verdict, code: str) -> None:
    assert verdict.effect is Effect.ASK, verdict
    assert code in _codes(verdict), _codes(verdict)


@pytest.mark.parametrize("mode", ["auto", "full"])
def test_a_roleless_setter_lends_no_role_no_quorum_no_dual_control(store: Store,
                                                                   mode: str) -> None:
    gate = _gate(store, 'full_mode_role = "approver-any"' if mode == "full" else "")
    if mode == "full":
        gate.set_roles("rita", ["approver-any"])  # may set full, still holds no ops
    gate.set_thread_mode("t1", mode, actor="rita")
    got = _verdicts(gate, "t1")
    _asks(got["restart"], "mode_setter_lacks_role")
    _asks(got["deploy"], "mode_needs_quorum")
    _asks(got["rotate"], "mode_needs_dual_control")
    # what rita could have approved herself, the mode still answers
    assert got["note"].effect is Effect.ALLOW
    assert got["note"].code == ("mode_full" if mode == "full" else "reviewer_approved")


def test_an_ops_setter_lends_ops_but_no_quorum(store: Store) -> None:
    gate = _gate(store)
    gate.set_thread_mode("t2", "full", actor="adam")  # admins may set full
    gate.set_roles("adam", ["ops"])
    got = _verdicts(gate, "t2")
    assert (got["restart"].effect, got["restart"].code) == (Effect.ALLOW, "mode_full")
    _asks(got["deploy"], "mode_needs_quorum")
    _asks(got["rotate"], "mode_needs_dual_control")
    # auto, set by olga (ops): the reviewer may pass the ops call; the quorum still asks
    gate.set_thread_mode("t3", "auto", actor="olga")
    got = _verdicts(gate, "t3")
    assert got["restart"].effect is Effect.ALLOW
    assert "mode_setter_lacks_role" not in _codes(got["restart"])
    _asks(got["deploy"], "mode_needs_quorum")


def test_the_setter_is_judged_as_stored_now(store: Store) -> None:
    gate = _gate(store)
    gate.set_thread_mode("t4", "auto", actor="olga")
    assert _verdicts(gate, "t4")["restart"].effect is Effect.ALLOW
    gate.set_roles("olga", [])  # the role taken away takes its authority with it
    _asks(_verdicts(gate, "t4")["restart"], "mode_setter_lacks_role")
    gate.set_roles("olga", ["ops"])
    gate.disable_user("olga")
    got = _verdicts(gate, "t4")
    for tool in ("restart", "note", "deploy"):
        _asks(got[tool], "mode_setter_inactive")
    gate.enable_user("olga")
    assert _verdicts(gate, "t4")["note"].effect is Effect.ALLOW
    gate.remove_user("olga")
    _asks(_verdicts(gate, "t4")["note"], "mode_setter_inactive")


def test_an_expired_token_lends_nothing(store: Store) -> None:
    gate = _gate(store)
    now = [1_000_000.0]
    gate.clock = lambda: now[0]
    gate.add_user("tess", roles=("ops",), expires_in=60)
    gate.set_thread_mode("t6", "full", actor="adam")
    gate.set_thread_mode("t6", "auto", actor="tess")
    assert _verdicts(gate, "t6")["restart"].effect is Effect.ALLOW
    now[0] += 61
    _asks(_verdicts(gate, "t6")["restart"], "mode_setter_inactive")


def test_a_mode_set_by_trusted_code_keeps_its_reach(store: Store) -> None:
    gate = _gate(store)
    gate.set_thread_mode("t7", "full")  # no actor: the operator's code
    got = _verdicts(gate, "t7")
    assert all(v.effect is Effect.ALLOW for v in got.values()), got


def test_a_resumed_run_keeps_its_setter(store: Store) -> None:
    """A run fixes its mode at start; proposing again later (a resume) judges the setter as
    stored then: a run started under olga's auto does not outlive her ops role."""
    gate = _gate(store)
    gate.set_thread_mode("t9", "auto", actor="olga")
    run = gate.start_run(RunContext(thread_id="t9", run_id="run-9"))
    assert (run.review_mode and run.review_mode.value, run.mode_setter) == ("auto", "olga")
    call = ToolCall(id="r1", name="restart", args={"service": "db"})
    assert gate.check(call, run).effect is Effect.ALLOW
    gate.set_roles("olga", ["dba"])
    _asks(gate.check(call, run), "mode_setter_lacks_role")


@pytest.mark.parametrize(("review", "allowed", "refused"), [
    ("", ["adam"], ["rita", "olga", "lena"]),
    ('full_mode_role = "lead"', ["adam", "lena"], ["rita", "olga"]),
])
def test_who_may_set_full(store: Store, review: str, allowed: list[str],
                          refused: list[str]) -> None:
    gate = _gate(store, review)
    for name in refused:
        with pytest.raises(Forbidden) as caught:
            gate.set_thread_mode(f"f-{name}", "full", actor=name)
        assert caught.value.code == "full_mode_not_allowed"
        assert store.thread_memory(f"f-{name}", fresh=True).mode is None
        gate.set_thread_mode(f"f-{name}", "auto", actor=name)  # auto is anyone's
    for name in allowed:
        assert gate.set_thread_mode(f"f-{name}", "full", actor=name).value == "full"
    gate.set_thread_mode("f-code", "full")  # trusted code
    for name in allowed[1:]:  # disabled, the role's holder may not
        gate.disable_user(name)
        with pytest.raises(Forbidden) as caught:
            gate.set_thread_mode("f-again", "full", actor=name)
        assert caught.value.code == "full_mode_not_allowed"
