"""``signoff requests show`` prints the arguments with what the inbox flags escaped.

A direction override (U+202E) or a zero-width space (U+200B) in an argument would make
a terminal draw text other than what will run; the show command writes them as ``\\u``
escapes (still the same JSON value) and says how many there were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signoff import Policy, RunContext, ToolCall
from signoff.cli import main
from signoff.kernel.gate import Gate
from signoff.model import Decision
from signoff.store.sqlite import SqliteStore

HIDDEN_ARGS = {"command": "cat notes\u202etxt.sh", "note": "ok\u200bay", "pad": "a\u2066b\u00a0"}


def test_requests_show_escapes_hidden_characters(
        tmp_path: Path, policy: Policy, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "cli.db")
    monkeypatch.setenv("SIGNOFF_DB", db)
    gate = Gate(policy, SqliteStore(db))
    alice, _ = gate.add_user("alice", roles=["ops"])
    proposal = gate.propose(ToolCall(id="c1", name="deploy", args=HIDDEN_ARGS),
                            RunContext(thread_id="t1"))
    assert proposal.request is not None
    rid = proposal.request.id
    edited = {**HIDDEN_ARGS, "note": "edited\u202d"}
    gate.decide(rid, Decision.edit(edited), identity=alice)
    gate.store.close()

    assert main(["requests", "show", rid]) == 0
    out = capsys.readouterr().out
    for hidden in ("\u202e", "\u200b", "\u2066", "\u00a0", "\u202d"):
        assert hidden not in out, repr(hidden)
    [args_line] = [line for line in out.splitlines() if line.startswith("  args (")]
    [edit_line] = [line for line in out.splitlines() if line.startswith("  edited to (")]
    assert "\\u202e" in args_line and "\\u200b" in args_line and "\\u2066" in args_line
    assert args_line.endswith("[4 hidden character(s) shown as \\u escapes]")
    assert "\\u202d" in edit_line
    shown = args_line.split("): ", 1)[1].rsplit("  [", 1)[0]
    assert json.loads(shown) == HIDDEN_ARGS  # the same value, only spelled visibly

    assert main(["requests", "show", rid, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["args"] == HIDDEN_ARGS  # the JSON output keeps the value


def test_requests_show_leaves_plain_arguments_alone(
        tmp_path: Path, policy: Policy, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "cli.db")
    monkeypatch.setenv("SIGNOFF_DB", db)
    gate = Gate(policy, SqliteStore(db))
    proposal = gate.propose(ToolCall(id="c1", name="deploy", args={"env": "café tab\there"}),
                            RunContext(thread_id="t1"))
    assert proposal.request is not None
    gate.store.close()
    assert main(["requests", "show", proposal.request.id]) == 0
    out = capsys.readouterr().out
    assert '{"env":"café tab\\there"}' in out and "hidden character" not in out
