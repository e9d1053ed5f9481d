"""The real Gemini CLI (pinned, from npm) gated by signoff as a user sets it up:
``signoff init --preset gemini``, ``signoff hook install gemini``, the scripted model
asking for tools, the CLI headless in yolo mode (its own prompt off: the hook is the
gate). An allowed read runs; a denied command never runs (the ledger file survives); an
ask nobody decides in time is denied with its request named, a human approves it with
``signoff requests approve``, and the same call retried in that session (``--resume``)
runs once; an edit's request holds its old and new text and the diff; the audit
verifies and names the harness and the session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gemini_api import FunctionCall, GeminiServer, function_responses, this_turn
from gemini_rig import GeminiProject, gemini_bin

from rigs import resident_hooks

pytestmark = pytest.mark.slow

SIGNOFF = [sys.executable, "-m", "signoff.cli"]


def signoff(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SIGNOFF, *argv], capture_output=True, text=True, timeout=120,
                          check=False, env=env)


class Gated:
    """A Gemini CLI project with signoff's hooks installed, on an in-process database."""

    def __init__(self, root: Path) -> None:
        self.project = GeminiProject(root)
        self.ws = self.project.dir
        self.policy = root / "signoff.toml"
        self.db = root / "signoff.db"
        self.env = {**os.environ, "XDG_STATE_HOME": str(root / "state"),
                    "HOME": str(self.project.home)}
        for argv in (("init", str(self.policy), "--root", str(self.ws), "--preset", "gemini"),
                     ("db", "migrate", "--db", str(self.db)),
                     ("hook", "install", "gemini", "--project", "--dir", str(self.ws),
                      "--db", str(self.db), "--policy", str(self.policy), "--wait", "3",
                      "--signoff", " ".join(SIGNOFF))):
            done = signoff(*argv, env=self.env)
            assert done.returncode == 0, (argv, done.stderr)
        added = signoff("users", "add", "alice", "--roles", "ops", "--db", str(self.db),
                        "--json", env=self.env)
        assert added.returncode == 0, added.stderr
        self.token = root / "alice.token"
        self.token.write_text(json.loads(added.stdout)["token"], "utf-8")

    def run(self, call: FunctionCall, *, resume: str | None = None) -> dict[str, Any]:
        """The scripted model asking for ``call`` (in the session ``resume`` names, else a
        new one); the response the CLI sent back for it, with the session as ``session``."""
        passed = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
        with GeminiServer([call]) as server:
            done = self.project.run(server, "Do the task.",
                                    *(("--resume", resume) if resume else ()),
                                    env={"XDG_STATE_HOME": self.env["XDG_STATE_HOME"],
                                         **passed})
            assert server.script.escapes() == [], "the CLI tried to reach beyond loopback"
            turns = server.script.turns()
        assert done.returncode == 0 and len(turns) == 2, (done.stdout, done.stderr)
        (response,) = function_responses(this_turn(turns[-1].body))
        assert response["name"] == call.name
        return {**response["response"], "session": done.result.get("session_id")}

    def requests(self) -> list[dict[str, Any]]:
        listed = signoff("requests", "list", "--db", str(self.db), "--json", env=self.env)
        assert listed.returncode == 0, listed.stderr
        found: list[dict[str, Any]] = json.loads(listed.stdout)
        return found

    def show(self, request_id: str) -> dict[str, Any]:
        shown = signoff("requests", "show", request_id, "--db", str(self.db), "--json",
                        env=self.env)
        assert shown.returncode == 0, shown.stderr
        found: dict[str, Any] = json.loads(shown.stdout)
        return found

    def approve(self, request_id: str) -> None:
        approved = signoff("requests", "approve", request_id, "--token-file", str(self.token),
                           "--db", str(self.db), "--policy", str(self.policy), env=self.env)
        assert approved.returncode == 0, approved.stderr


@pytest.fixture(scope="module")
def gemini() -> Path:
    return gemini_bin()


def test_gemini_cli_gated_by_signoff_reads_denies_asks_and_runs_once(
        gemini: Path, tmp_path: Path) -> None:
    gated = Gated(tmp_path)
    (gated.ws / "notes.txt").write_text("remember the milk\n")
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")

    # An allowed read runs.
    read = gated.run(FunctionCall("read_file", {"file_path": "notes.txt"}))
    assert "remember the milk" in json.dumps(read) and "error" not in read

    # A denied command never runs: the ledger survives.
    denied = gated.run(FunctionCall("run_shell_command", {"command": "rm -f ledger"}))
    assert "not allowed" in denied["error"]
    assert ledger.read_text() == "kept\n"

    # An ask nobody decides within the hook's wait is denied, naming its request.
    write = FunctionCall("run_shell_command", {"command": "echo hi > ledger"})
    waited = gated.run(write)
    (pending,) = [r for r in gated.requests() if r["status"] == "pending"]
    assert pending["id"] in waited["error"]
    assert ledger.read_text() == "kept\n"
    assert pending["tool"] == "run_shell_command" and pending["agent"] == "gemini-cli"
    assert pending["thread_id"] == waited["session"]  # the Gemini CLI session

    # A human approves it; the same call, retried in that session, joins the request and
    # runs once.
    gated.approve(pending["id"])
    ran = gated.run(write, resume=str(waited["session"]))
    assert "error" not in ran, ran
    assert ledger.read_text() == "hi\n"
    assert gated.show(pending["id"])["status"] == "succeeded"  # AfterTool reported it

    # An edit's request holds the file, its old and new text, and the diff they make.
    edit = FunctionCall("replace", {"file_path": str(gated.ws / "notes.txt"),
                                    "old_string": "milk", "new_string": "bread",
                                    "instruction": "Change what to remember."})
    asked = gated.run(edit)
    (request,) = [r for r in gated.requests() if r["status"] == "pending"]
    assert request["id"] in asked["error"] and request["tool"] == "replace"
    shown = gated.show(request["id"])
    assert shown["args"] == edit.args
    [change] = shown["changes"]
    assert "-remember the milk" in change["diff"] and "+remember the bread" in change["diff"]
    assert (gated.ws / "notes.txt").read_text() == "remember the milk\n"
    gated.approve(request["id"])
    assert "error" not in gated.run(edit, resume=str(asked["session"]))
    assert (gated.ws / "notes.txt").read_text() == "remember the bread\n"

    verified = signoff("audit", "verify", "--db", str(gated.db), "--json", env=gated.env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"], verified.stdout
    exported = signoff("audit", "export", "--db", str(gated.db), "--json", env=gated.env)
    events = json.loads(exported.stdout)
    created = [e for e in events if e["kind"] == "request.created"]
    # The audit names the harness (the agent) and its session (the thread) of each ask.
    assert {(e["data"]["agent"], e["data"]["thread_id"]) for e in created} == {
        ("gemini-cli", waited["session"]), ("gemini-cli", asked["session"])}, created


def test_gemini_cli_with_the_resident_hook(gemini: Path, tmp_path: Path) -> None:
    """The same with the hooks ``hook install gemini --url`` writes (the standard-library
    client) against a running ``signoff serve``: an allowed read runs, a denied command
    never does, an approved ask runs once, and the request names Gemini CLI, the agent's
    user and the session."""
    gated = Gated(tmp_path)
    (gated.ws / "notes.txt").write_text("remember the milk\n")
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")
    with resident_hooks("gemini", db=gated.db, policy=gated.policy, cwd=tmp_path,
                        env=gated.env, settings=gated.ws / ".gemini" / "settings.json",
                        install=("--project", "--dir", str(gated.ws))) as url:
        read = gated.run(FunctionCall("read_file", {"file_path": "notes.txt"}))
        assert "remember the milk" in json.dumps(read) and "error" not in read
        denied = gated.run(FunctionCall("run_shell_command", {"command": "rm -f ledger"}))
        assert "not allowed" in denied["error"] and ledger.read_text() == "kept\n"

        write = FunctionCall("run_shell_command", {"command": "echo hi > ledger"})
        waited = gated.run(write)
        (pending,) = [r for r in gated.requests() if r["status"] == "pending"]
        assert f"{url}/requests/{pending['id']}" in waited["error"]
        assert (pending["agent"], pending["principal"], pending["thread_id"]) == (
            "gemini-cli", "gemini-bot", waited["session"])
        gated.approve(pending["id"])
        ran = gated.run(write, resume=str(waited["session"]))
        assert "error" not in ran, ran
        assert ledger.read_text() == "hi\n"
        assert gated.show(pending["id"])["status"] == "succeeded"  # AfterTool reported it
