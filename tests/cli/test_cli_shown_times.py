"""``requests show``: a pending request says when it expires, a decided one who decided it
and when (a rejection with its reason and alternatives), every time in UTC and saying
so; ``users list`` shows its times in UTC too."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pytest

from signoff import Policy, RunContext, ToolCall
from signoff.cli import build_parser, main
from signoff.kernel.gate import Gate
from signoff.model import Decision
from signoff.store.sqlite import SqliteStore
from signoff.times import TIME_HELP, shown


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
    request = gate.get_request(_propose(gate, "c1"))
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


@pytest.mark.parametrize("flag", ["--since", "--until"])
def test_list_times_read_dates_ages_and_epoch_seconds(
        gate: Gate, capsys: pytest.CaptureFixture[str], flag: str) -> None:
    request = gate.get_request(_propose(gate, "c3"))
    created = request.created_at
    day = time.strftime("%Y-%m-%d", time.gmtime(created))
    before, after = ((["1h", str(int(created) - 5), "2000-01-01", "2000-01-01T00:00Z"],
                      ["0s", "2100-01-01", f"{day}T23:59:59+00:00"]) if flag == "--since" else
                     (["0s", "2100-01-01", str(int(created) + 5)],
                      ["1h", "2000-01-01T00:00+02:00", str(int(created) - 5)]))
    for value in before:  # the request was created after --since (before --until)
        assert main(["requests", "list", flag, value, "--json"]) == 0, value
        assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [request.id], value
    for value in after:
        assert main(["requests", "list", flag, value, "--json"]) == 0, value
        assert json.loads(capsys.readouterr().out) == [], value


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", "3x", "", "1e9", "-5",
                                   "9" * 400, "2026-01-01\x00"])
@pytest.mark.parametrize("argv", [["requests", "list", "--since"], ["requests", "list", "--until"],
                                  ["db", "purge", "--before"]])
def test_every_time_option_refuses_what_is_not_a_time(
        gate: Gate, capsys: pytest.CaptureFixture[str], argv: list[str], value: str) -> None:
    assert main([*argv, value, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "invalid_time"
    assert error["message"].startswith(f"{argv[-1]} ")
    assert "is not a time: give epoch seconds, an ISO 8601 date or time" in error["message"]
    assert len(error["message"]) < 300  # a long value is not echoed whole


def test_time_options_say_what_they_take() -> None:
    parser = build_parser()
    helps = {tuple(path): text for path, text in _option_helps(parser)}
    for key in (("requests", "list", "--since"), ("requests", "list", "--until"),
                ("db", "purge", "--before")):
        assert TIME_HELP in helps[key], key


def _option_helps(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
                  ) -> list[tuple[tuple[str, ...], str]]:
    found: list[tuple[tuple[str, ...], str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _option_helps(sub, (*path, name))
        elif action.option_strings:
            found.append(((*path, action.option_strings[-1]), action.help or ""))
    return found
