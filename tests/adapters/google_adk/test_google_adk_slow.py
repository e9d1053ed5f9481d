"""Slow (real processes): the main flow against a real ``signoff serve`` — the plugin's gate
is a ``Client`` (every propose, outcome, claim and report crosses the wire), the approver
decides through the API with their own token — and a pause that outlives its process: the
agent pauses in one process, a person approves with ``signoff requests approve``, a new
process resumes from the stored session."""

from __future__ import annotations

from pathlib import Path

import pytest
from adk_helpers import POLICY, Harness, calls, responses, run, stored_session, text, user
from lc_remote import RemoteGate

from signoff import Decision, Policy
from signoff.adapters.google_adk import pauses, resume_message
from signoff.model import RequestStatus

pytestmark = pytest.mark.slow


def test_ask_approve_edit_and_replay_through_a_server(tmp_path: Path) -> None:
    policy = Policy.from_toml(POLICY, source="adk.toml")
    client = RemoteGate(POLICY, policy, tmp_path)
    try:
        h = Harness(gate=client, ledger=tmp_path / "ledger.txt",  # type: ignore[arg-type]
                    alice=client.alice, tmp=tmp_path, sessions_db=tmp_path / "sessions.db")
        runner, _ = h.runner([calls(("lookup", {"key": "k"}, "c1"),
                                    ("transfer", {"to": "bob", "amount": 5}, "c2"),
                                    ("wipe", {"target": "db"}, "c3"))])
        run(runner, user("go"), create=True)
        assert h.ran() == ["lookup k"]
        (pause,) = pauses(stored_session(runner).events)
        client.decide(pause.request_id, Decision.edit({"to": "bob", "amount": 2},
                                                      reason="two is enough"))
        again, model = h.runner([text("done")])
        wake = resume_message(stored_session(again))
        run(again, wake)
        assert h.ran() == ["lookup k", "transfer bob 2"]
        shown = responses(model)
        assert shown["c2"]["sent"] == 2 and "two is enough" in shown["c2"]["signoff_note"]
        assert shown["c3"]["signoff"]["effect"] == "deny"
        run(again, wake)  # replayed: nothing runs twice
        assert h.ran() == ["lookup k", "transfer bob 2"]
        assert client.get_request(pause.request_id).status is RequestStatus.SUCCEEDED
    finally:
        client.close()


def test_pause_in_one_process_approve_with_the_cli_resume_in_another(tmp_path: Path) -> None:
    """Three processes: the agent pauses and exits; a person approves with
    ``signoff requests approve``; a new process resumes from the stored session."""
    import os
    import subprocess
    import sys

    from signoff import Gate, SqliteStore

    here = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(here), str(here.parent), *sys.path]), "SIGNOFF_DB": str(tmp_path / "signoff.db"),
        "OTEL_SDK_DISABLED": "true"}

    def python(*argv: str) -> str:
        done = subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                              timeout=120, check=False, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    gate = Gate(Policy.from_toml(POLICY, source="adk.toml"), SqliteStore(tmp_path / "signoff.db"))
    _, token = gate.add_user("alice")
    gate.close()
    request_id = python(str(here / "adk_process.py"), "pause", str(tmp_path)).strip()
    assert request_id.startswith("req_")
    assert not (tmp_path / "ledger.txt").exists()
    (tmp_path / "signoff.toml").write_text(POLICY, "utf-8")
    said = python("-m", "signoff.cli", "requests", "approve", request_id, "--token", token)
    assert "approved" in said
    said = python(str(here / "adk_process.py"), "resume", str(tmp_path))
    assert "ran: ['transfer bob 5']" in said
