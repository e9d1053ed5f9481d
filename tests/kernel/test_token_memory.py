"""A token checked a moment ago is answered from memory (``Gate.remembered_identity``):
the server spares each request a thread hop and a read. Every change made through the
gate forgets at once; a change made elsewhere is seen within ``TOKEN_FRESH``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kit import twin_store
from signoff.errors import Unauthenticated
from signoff.kernel import admin
from signoff.kernel.gate import Gate
from signoff.policy import Policy
from signoff.store.base import Store


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def gate(policy: Policy, store: Store) -> Gate:
    return Gate(policy, store, clock=Clock())


def test_a_checked_token_is_remembered_and_nothing_else_is(gate: Gate) -> None:
    _, token = gate.add_user("ann", roles=["ops"])
    assert gate.remembered_identity(token) is None  # never checked: ask the store
    assert gate.authenticate(token).name == "ann"
    remembered = gate.remembered_identity(token)
    assert remembered is not None and remembered.name == "ann" and remembered.roles == ("ops",)
    assert gate.remembered_identity("not-a-token") is None
    assert gate.remembered_identity(None) is None
    with pytest.raises(Unauthenticated):
        gate.authenticate("not-a-token")
    assert gate.remembered_identity("not-a-token") is None  # refusals are never remembered


def test_memory_lasts_token_fresh_seconds(gate: Gate, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin, "TOKEN_FRESH", 0.05)
    _, token = gate.add_user("ann")
    gate.authenticate(token)
    assert gate.remembered_identity(token) is not None
    time.sleep(0.06)
    assert gate.remembered_identity(token) is None


@pytest.mark.parametrize("change", ["disable", "remove", "rotate", "roles"])
def test_a_change_through_the_gate_is_seen_at_once(gate: Gate, change: str) -> None:
    gate.add_user("boss", roles=["admin"])
    _, token = gate.add_user("ann", roles=["ops"])
    gate.authenticate(token)
    {"disable": lambda: gate.disable_user("ann"), "remove": lambda: gate.remove_user("ann"),
     "rotate": lambda: gate.rotate_token("ann"),
     "roles": lambda: gate.set_roles("ann", ["dev"])}[change]()
    assert gate.remembered_identity(token) is None
    if change == "roles":
        assert gate.authenticate(token).roles == ("dev",)
    else:
        with pytest.raises(Unauthenticated):
            gate.authenticate(token)


def test_a_change_made_elsewhere_is_seen_within_token_fresh(policy: Policy, store: Store,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setattr(admin, "TOKEN_FRESH", 0.2)
    here = Gate(policy, store)
    other_store = twin_store(store)
    try:
        there = Gate(policy, other_store)
        _, token = here.add_user("ann")
        here.authenticate(token)
        there.disable_user("ann")  # another server, or the CLI
        started = time.monotonic()  # after the check above: its memory is older than this
        while True:
            asked = time.monotonic() - started
            if here.remembered_identity(token) is None:
                break
            assert asked <= 0.2  # answered from memory only while it is fresh
            time.sleep(0.01)
        with pytest.raises(Unauthenticated) as refused:
            here.authenticate(token)
        assert refused.value.code == "identity_disabled"
    finally:
        other_store.close()


def test_an_expired_token_is_not_answered_from_memory(gate: Gate) -> None:
    _, token = gate.add_user("ann", expires_in=60)
    gate.authenticate(token)
    assert gate.remembered_identity(token) is not None
    gate.clock.now += 61  # type: ignore[attr-defined]
    assert gate.remembered_identity(token) is None
    with pytest.raises(Unauthenticated) as refused:
        gate.authenticate(token)
    assert refused.value.code == "token_expired"
