"""An ended session explains itself (found by the issue-12 flake hunt): another person
signing in sweeps only sessions that ended a day ago, so the one whose session just ran
out is told ``session_expired``, not ``unauthenticated`` — on both backends."""

from __future__ import annotations

import pytest

from signoff.errors import Unauthenticated
from signoff.kernel.gate import Gate
from signoff.kernel.sessions import SessionLimits
from signoff.policy import Policy
from signoff.store.base import Store


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _refusal(gate: Gate, secret: str) -> str:
    with pytest.raises(Unauthenticated) as caught:
        gate.session_identity(secret)
    return caught.value.code


def test_an_ended_session_is_kept_a_day_to_say_so(store: Store) -> None:
    clock = Clock()
    gate = Gate(Policy.from_toml('[policy]\nversion = "s-1"\n'), store, clock=clock)
    limits = SessionLimits(idle=60.0, lifetime=120.0)
    tokens = {name: gate.add_user(name)[1] for name in ("ann", "bob", "cy")}
    ann, _ = gate.sign_in(tokens["ann"], limits=limits)
    clock.now += 121  # ann's session ran out…
    gate.sign_in(tokens["bob"], limits=limits)  # …and bob signing in sweeps nothing yet
    assert _refusal(gate, ann) == "session_expired"
    clock.now += 86_400
    gate.sign_in(tokens["cy"], limits=limits)  # a day on, it is swept
    assert _refusal(gate, ann) == "unauthenticated"
