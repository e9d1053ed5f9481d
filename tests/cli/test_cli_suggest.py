"""``signoff insights suggest``: the history read through the gate, the list, ``--apply``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from signoff import Effect, Policy, RunContext, ToolCall
from signoff.cli import main
from signoff.decisions import Decision
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.model import ReviewMode
from signoff.policy.starter import starter_toml
from signoff.policy.suggest import Outcome, read_history, suggest
from signoff.review import RiskReviewer
from signoff.store.base import Store
from signoff.store.sqlite import SqliteStore

APPROVED = ["python a.py", "python b.py", "python c.py", "python a.py",
            "cat <<'EOF' > t1.py\nx = 1\nEOF", "cat <<'EOF' > t2.py\nx = 2\nEOF"]


def record(gate: Gate) -> dict[str, str]:
    """A history: approvals, a rejection, an edit, a response; the request ids by command."""
    ids: dict[str, str] = {}
    gate.add_user("alice")
    alice = Identity(name="alice")

    def ask(n: int, command: str) -> str:
        proposal = gate.propose(ToolCall(id=f"c{n}", name="execute", args={"command": command}),
                                RunContext(thread_id="t1", review_mode=ReviewMode.MANUAL))
        assert proposal.request is not None, command
        ids[command] = proposal.request.id
        return proposal.request.id

    for n, command in enumerate(APPROVED):
        gate.decide(ask(n, command), Decision.approve(), identity=alice)
    gate.decide(ask(20, "python drop_db.py"), Decision.reject("no"), identity=alice)
    gate.decide(ask(21, "python e.py"), Decision.edit({"command": "python f.py"}),
                identity=alice)
    gate.decide(ask(22, "python g.py"), Decision.respond("use the tests"), identity=alice)
    ask(23, "python pending.py")
    return ids


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    path = tmp_path / "signoff.toml"
    path.write_text(starter_toml(str(root)), "utf-8")
    return path


def test_the_history_is_read_through_the_gate_and_proven(store: Store,
                                                         policy_file: Path) -> None:
    text = policy_file.read_text("utf-8")
    gate = Gate(Policy.from_toml(text), store)
    ids = record(gate)
    history = read_history(gate, page=3)  # several pages
    outcomes = {d.request_id: d.outcome for d in history}
    assert outcomes[ids["python drop_db.py"]] is Outcome.REJECTED
    assert outcomes[ids["python e.py"]] is Outcome.EDITED
    assert outcomes[ids["python g.py"]] is Outcome.RESPONDED
    assert ids["python pending.py"] not in outcomes
    report = suggest(text, history, reviewer=RiskReviewer())
    assert report.saved == len(APPROVED)
    commands = {c for s in report.suggestions for c in s.commands}
    assert "python *.py" not in commands  # a rejected `python drop_db.py` forbids it
    assert "python a.py" in commands


@pytest.fixture
def cli(tmp_path: Path, policy_file: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    db = str(tmp_path / "cli.db")
    monkeypatch.setenv("SIGNOFF_DB", db)
    monkeypatch.chdir(tmp_path)
    store = SqliteStore(db)
    ids = record(Gate(Policy.load(policy_file), store))
    store.close()
    return ids


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def judge(policy: Policy, command: str) -> Effect:
    return policy.evaluate(ToolCall(id="x", name="execute", args={"command": command}),
                           RunContext(review_mode=ReviewMode.MANUAL, thread_id="j")).effect


def test_list_then_apply_writes_a_policy_that_loads_and_gives_the_replayed_verdicts(
        cli: dict[str, str], policy_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "insights", "suggest", "--json")
    assert code == 0
    listed = json.loads(out)
    assert listed["policy_version"] == "1" and listed["saved"] == len(APPROVED)
    code, out, _ = run(capsys, "insights", "suggest")
    assert code == 0 and "evidence:" in out and listed["suggestions"][0]["id"] in out
    before = policy_file.read_text("utf-8")
    code, out, _ = run(capsys, "insights", "suggest", "--apply", "--yes")
    assert code == 0 and "+[[rules]]" in out and "(version 2)" in out
    after = policy_file.read_text("utf-8")
    assert "# Suggested by `signoff insights suggest` on" in after
    assert after.count("# Read-only commands.") == before.count("# Read-only commands.") == 1
    policy = Policy.load(policy_file)
    assert policy.version == "2"
    for command in APPROVED:
        assert judge(policy, command) is Effect.ALLOW, command
    for command in ("python drop_db.py", "python e.py", "python g.py"):
        assert judge(policy, command) is Effect.ASK, command
    code, out, _ = run(capsys, "insights", "suggest", "--json")
    assert code == 0 and json.loads(out)["suggestions"] == []  # nothing left to save


def test_apply_one_by_id(cli: dict[str, str], policy_file: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "insights", "suggest", "--json")
    first = json.loads(out)["suggestions"][0]
    code, out, _ = run(capsys, "insights", "suggest", "--apply", first["id"], "--yes", "--json")
    assert code == 0 and [s["id"] for s in json.loads(out)["applied"]] == [first["id"]]
    assert policy_file.read_text("utf-8").count("[[rules]]") == \
        starter_toml("/x").count("[[rules]]") + 1


def test_typed_errors(cli: dict[str, str], policy_file: Path, tmp_path: Path,
                      capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run(capsys, "insights", "suggest", "--apply", "s-nothere", "--yes")
    assert code == 2 and "[unknown_suggestion]" in err
    code, _, err = run(capsys, "insights", "suggest", "--apply", "--yes",
                       "--expect-version", "0")
    assert code == 2 and "[policy_stale]" in err
    code, _, err = run(capsys, "insights", "suggest", "--apply")  # no terminal, no --yes
    assert code == 2 and "[confirmation_required]" in err
    before = policy_file.read_text("utf-8")

    def refused(src: object, dst: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refused)
    code, _, err = run(capsys, "insights", "suggest", "--apply", "--yes")
    assert code == 2 and "[policy_unwritable]" in err
    assert policy_file.read_text("utf-8") == before
    code, _, err = run(capsys, "insights", "suggest", "--db", str(tmp_path / "none.db"))
    assert code == 2 and "[database_missing]" in err
    SqliteStore(str(tmp_path / "empty.db")).close()
    code, _, err = run(capsys, "insights", "suggest", "--db", str(tmp_path / "empty.db"))
    assert code == 2 and "[no_history]" in err
    code, _, err = run(capsys, "insights", "suggest", "--policy", str(tmp_path / "no.toml"))
    assert code == 2 and "[policy_unreadable]" in err
