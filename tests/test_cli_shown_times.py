"""``requests show``: a pending request says when it expires, a decided one who decided it
and when (a rejection with its reason and alternatives), every time in UTC and saying
so; ``users list`` shows its times in UTC too."""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff import Policy, RunContext, ToolCall
from signoff.cli import main
from signoff.kernel.gate import Gate
from signoff.model import Decision
from signoff.store.sqlite import SqliteStore
from signoff.times import shown


def _show(capsys: pytest.CaptureFixture[str], request_id: str) -> list[str]:
    assert main(["requests", "show", request_id]) == 0
    return capsys.readouterr().out.splitlines()


@pytest.fixture
def gate(tmp_path: Path, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> Gate:
    db = str(tmp_path / "cli.db")
    monkeypatch.setenv("SIGNOFF_DB", db)
    monkeypatch.chdir(tmp_path)
    return Gate(policy, SqliteStore(db))


def _propose(gate: Gate, call_id: str) -> str:
    pending = gate.propose(ToolCall(id=call_id, name="execute", args={"command": "make build"}),
                           RunContext(thread_id="t1"))
    assert pending.request is not None and pending.request.expires_at is not None
    return pending.request.id


def test_a_pending_request_shows_when_it_expires(gate: Gate,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    request = gate.store_get(_propose(gate, "c1"))
    assert request.expires_at is not None
    lines = _show(capsys, request.id)
    assert f"  created {shown(request.created_at)}" in lines
    expiry = [line for line in lines if line.startswith("  expires ")]
    assert expiry and expiry[0].startswith(f"  expires {shown(request.expires_at)} (in ")
    assert not [line for line in lines if line.startswith("  decided")]


def test_a_rejected_request_shows_the_rejection_not_an_expiry(
        gate: Gate, capsys: pytest.CaptureFixture[str]) -> None:
    identity, _ = gate.add_user("alice", roles=["ops"])
    request_id = _propose(gate, "c2")
    gate.decide(request_id, Decision.reject("not on Fridays", ["make test", "wait"]),
                identity=identity)
    at = gate.store.decisions(request_id)[0].created_at
    lines = _show(capsys, request_id)
    assert not [line for line in lines if "expires" in line]
    assert f"  decided: rejected by alice, {shown(at)}: not on Fridays" in lines
    assert "  alternatives offered: make test; wait" in lines
    assert (f"  reject by alice, {shown(at)}: not on Fridays (alternatives: make test; wait)"
            in lines)


def test_times_in_lists_say_utc(gate: Gate, capsys: pytest.CaptureFixture[str]) -> None:
    gate.add_user("temp", roles=[], expires_in=3600)
    expires = gate.users()[0].token_expires_at
    assert expires is not None
    assert main(["users", "list"]) == 0
    out = capsys.readouterr().out
    assert f" {shown(expires)} " in out and out.count(" UTC") == 1
