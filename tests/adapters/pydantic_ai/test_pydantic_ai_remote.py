"""The main flow with the gate on another machine: ``Signoff(Client(...))`` to a real
``signoff serve`` (a subprocess on loopback) — allow, deny, ask, approve over the API with
the approver's own token, resume in new agent objects, the approved call run once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lc_remote import RemoteGate
from pyd_helpers import POLICY, Harness, calls, text

from signoff import Policy
from signoff.adapters.pydantic_ai import Paused, request_ids
from signoff.decisions import Decision

pytestmark = pytest.mark.slow


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[RemoteGate]:
    gate = RemoteGate(POLICY, Policy.from_toml(POLICY, source="pyd.toml"), tmp_path)
    yield gate
    gate.close()


def test_ask_approve_resume_through_a_server(remote: RemoteGate, tmp_path: Path) -> None:
    h = Harness(gate=remote, ledger=tmp_path / "ledger.txt", alice=remote.alice,  # type: ignore[arg-type]
                bob=remote.alice, tmp=tmp_path)
    agent, _ = h.agent([calls(("read_file", {"path": "a"}, "r1"), ("rm", {"path": "b"}, "x1"),
                              ("transfer", {"amount": 3, "to": "bob"}, "t1"))])
    stored = Paused.of(agent.run_sync("pay bob")).dumps()
    assert h.ran() == ["read_file a"]
    rid = request_ids(Paused.loads(stored).requests)["t1"]
    remote.decide(rid, Decision.approve(), identity=remote.alice)
    fresh, script = h.agent([text("paid")])
    assert fresh.run_sync(**Paused.loads(stored).resume_kwargs()).output == "paid"
    again, _ = h.agent([text("again")])
    again.run_sync(**Paused.loads(stored).resume_kwargs())  # a replay: nothing runs twice
    assert h.ran() == ["read_file a", "transfer 3 bob"]
    assert script.returns()["t1"] == "sent 3 to bob" and "no-rm" in script.returns()["x1"]
    assert remote.get_request(rid).status.value == "succeeded"
