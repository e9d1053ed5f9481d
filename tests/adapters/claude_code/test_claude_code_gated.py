"""The real Claude Code CLI (pinned, from npm) gated by signoff as a user sets it up:
``signoff init --preset claude-code``, ``signoff hook install claude-code``, the scripted
model asking for tools. An allowed read runs; a denied command never runs (the ledger file
survives); an ask nobody decides in time is denied with its request named, a human
approves it with ``signoff requests approve``, and the same call retried runs once; the
audit verifies and names the harness and the session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_rig import Project, claude_bin
from messages_api import MessagesServer, ToolCall, tool_results

from rigs import resident_hooks

pytestmark = pytest.mark.slow

SIGNOFF = [sys.executable, "-m", "signoff.cli"]


def signoff(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SIGNOFF, *argv], capture_output=True, text=True, timeout=120,
                          check=False, env=env)


class Gated:
    """A Claude Code project with signoff's hooks installed, on an in-process database."""

    def __init__(self, root: Path) -> None:
        self.project = Project(root)
        self.ws = self.project.dir
        self.policy = root / "signoff.toml"
        self.db = root / "signoff.db"
        self.env = {**os.environ, "XDG_STATE_HOME": str(root / "state"),
                    "HOME": str(self.project.home)}
        for argv in (("init", str(self.policy), "--root", str(self.ws), "--preset",
                      "claude-code"),
                     ("db", "migrate", "--db", str(self.db)),
                     ("hook", "install", "claude-code", "--project", "--dir", str(self.ws),
                      "--db", str(self.db), "--policy", str(self.policy), "--wait", "3",
                      "--signoff", " ".join(SIGNOFF))):
            done = signoff(*argv, env=self.env)
            assert done.returncode == 0, (argv, done.stderr)
        added = signoff("users", "add", "alice", "--roles", "ops", "--db", str(self.db),
                        "--json", env=self.env)
        assert added.returncode == 0, added.stderr
        self.token = root / "alice.token"
        self.token.write_text(json.loads(added.stdout)["token"], "utf-8")

    def run(self, call: ToolCall, *, resume: str | None = None) -> dict[str, Any]:
        """The scripted model asking for ``call`` (in the session ``resume`` names, else a
        new one); the tool result it got, with the session id as ``session``. A resumed
        session's history holds the earlier call's result: the script counts it."""
        with MessagesServer([call, call] if resume else [call]) as server:
            done = self.project.run(server, "Do the task.",
                                    *(("--resume", resume) if resume else ()), env={
                                        "XDG_STATE_HOME": self.env["XDG_STATE_HOME"],
                                        "IS_SANDBOX": "1"})
            assert server.script.escapes() == [], "the CLI tried to reach beyond loopback"
            turns = server.script.turns()
        assert done.returncode == 0 and len(turns) == 2, (done.stdout, done.stderr)
        result = tool_results(turns[-1].body)[-1]
        return {**result, "session": done.result.get("session_id")}

    def approve(self, request_id: str) -> None:
        """``signoff requests approve`` by alice, an approver."""
        approved = signoff("requests", "approve", request_id, "--token-file", str(self.token),
                           "--db", str(self.db), "--policy", str(self.policy), env=self.env)
        assert approved.returncode == 0, approved.stderr

    def requests(self) -> list[dict[str, Any]]:
        listed = signoff("requests", "list", "--db", str(self.db), "--json", env=self.env)
        assert listed.returncode == 0, listed.stderr
        found: list[dict[str, Any]] = json.loads(listed.stdout)
        return found


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_bin()


def text_of(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content)
    return str(content)


def test_claude_code_gated_by_signoff_reads_denies_asks_and_runs_once(
        claude: Path, tmp_path: Path) -> None:
    gated = Gated(tmp_path)
    (gated.ws / "notes.txt").write_text("remember the milk\n")
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")

    # An allowed read runs.
    read = gated.run(ToolCall("Read", {"file_path": str(gated.ws / "notes.txt")}))
    assert "remember the milk" in text_of(read) and not read.get("is_error")

    # A denied command never runs: the ledger survives.
    denied = gated.run(ToolCall("Bash", {"command": "rm -f ledger",
                                         "description": "Remove the ledger"}))
    assert denied.get("is_error") and "not allowed" in text_of(denied)
    assert ledger.read_text() == "kept\n"

    # An ask nobody decides within the hook's wait is denied, naming its request.
    write = ToolCall("Bash", {"command": "echo hi > ledger", "description": "Write it"})
    waited = gated.run(write)
    (pending,) = [r for r in gated.requests() if r["status"] == "pending"]
    assert waited.get("is_error") and pending["id"] in text_of(waited)
    assert ledger.read_text() == "kept\n"
    assert pending["tool"] == "Bash" and pending["agent"] == "claude-code"

    # A human approves it; the same call, retried in that session, joins the request and
    # runs once.
    gated.approve(pending["id"])
    ran = gated.run(write, resume=str(waited["session"]))
    assert not ran.get("is_error"), text_of(ran)
    assert ledger.read_text() == "hi\n"
    (done,) = [r for r in gated.requests() if r["id"] == pending["id"]]
    assert done["status"] == "succeeded"  # the PostToolUse hook reported the result

    verified = signoff("audit", "verify", "--db", str(gated.db), "--json", env=gated.env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"], verified.stdout
    exported = signoff("audit", "export", "--db", str(gated.db), "--json", env=gated.env)
    events = json.loads(exported.stdout)
    created = [e for e in events if e["kind"] == "request.created"]
    # The audit names the harness (the agent) and its session (the thread) of each ask.
    assert {(e["data"]["agent"], e["data"]["thread_id"]) for e in created} == {
        ("claude-code", waited["session"])}, json.dumps(created)
    assert pending["thread_id"] == waited["session"]  # the Claude Code session


def test_an_edit_through_claude_code_asks_with_its_diff_and_runs_once_approved(
        claude: Path, tmp_path: Path) -> None:
    gated = Gated(tmp_path)
    target = gated.ws / "app.py"
    target.write_text("DEBUG = True\nPORT = 80\n")
    edit = ToolCall("Edit", {"file_path": str(target), "old_string": "DEBUG = True",
                             "new_string": "DEBUG = False"})
    # Claude Code edits only a file it has read in the session: read it first.
    read = ToolCall("Read", {"file_path": str(target)})
    with MessagesServer([read, edit]) as server:
        first = gated.project.run(server, "Turn debug off.", env={
            "XDG_STATE_HOME": gated.env["XDG_STATE_HOME"], "IS_SANDBOX": "1"})
        assert server.script.escapes() == []
        waited = tool_results(server.script.turns()[-1].body)[-1]
    assert first.returncode == 0, first.stderr
    (pending,) = [r for r in gated.requests() if r["status"] == "pending"]
    assert waited.get("is_error") and pending["id"] in text_of(waited)
    assert target.read_text() == "DEBUG = True\nPORT = 80\n"  # nothing ran
    # The request the approver sees holds the edit and its diff against the file.
    shown = json.loads(signoff("requests", "show", pending["id"], "--db", str(gated.db),
                               "--json", env=gated.env).stdout)
    assert shown["tool"] == "Edit" and shown["agent"] == "claude-code"
    assert shown["args"]["old_string"] == "DEBUG = True"
    (change,) = shown["changes"]
    assert change["kind"] == "diff", change
    assert "-DEBUG = True" in change["diff"] and "+DEBUG = False" in change["diff"]

    gated.approve(pending["id"])
    # The same edit retried in that session (its history holds the read and the denial).
    with MessagesServer([read, edit, edit]) as server:
        again = gated.project.run(server, "Turn debug off.", "--resume",
                                  str(first.result.get("session_id")), env={
                                      "XDG_STATE_HOME": gated.env["XDG_STATE_HOME"],
                                      "IS_SANDBOX": "1"})
        assert server.script.escapes() == []
        ran = tool_results(server.script.turns()[-1].body)[-1]
    assert again.returncode == 0, again.stderr
    assert not ran.get("is_error"), text_of(ran)
    assert target.read_text() == "DEBUG = False\nPORT = 80\n"
    (done,) = [r for r in gated.requests() if r["id"] == pending["id"]]
    assert done["status"] == "succeeded"


def test_an_approvers_edit_runs_in_claude_code_as_approved(claude: Path,
                                                           tmp_path: Path) -> None:
    gated = Gated(tmp_path)
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")
    write = ToolCall("Bash", {"command": "echo hi > ledger", "description": "Write it"})
    waited = gated.run(write)
    (pending,) = [r for r in gated.requests() if r["status"] == "pending"]
    assert waited.get("is_error") and pending["id"] in text_of(waited)
    edited = {"command": "echo edited > ledger", "description": "Write it"}
    done = signoff("requests", "edit", pending["id"], "--args", json.dumps(edited),
                   "--token-file", str(gated.token), "--db", str(gated.db), "--policy",
                   str(gated.policy), env=gated.env)
    assert done.returncode == 0, done.stderr
    ran = gated.run(write, resume=str(waited["session"]))
    assert not ran.get("is_error"), text_of(ran)
    # Claude Code ran the approved command (the hook's updatedInput), not the proposed one.
    assert ledger.read_text() == "edited\n"
    (settled,) = [r for r in gated.requests() if r["id"] == pending["id"]]
    assert settled["status"] == "succeeded"


def test_claude_code_with_the_resident_hook(claude: Path, tmp_path: Path) -> None:
    """The same with the hooks ``hook install --url`` writes: the standard-library client
    against a running ``signoff serve`` with an agent's token. An allowed read runs, a
    denied command never does, an ask is approved and its retry runs once, and the
    request names the harness, the agent's user and the session."""
    gated = Gated(tmp_path)
    (gated.ws / "notes.txt").write_text("remember the milk\n")
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")
    with resident_hooks("claude-code", db=gated.db, policy=gated.policy, cwd=tmp_path,
                        env=gated.env, settings=gated.ws / ".claude" / "settings.json",
                        install=("--project", "--dir", str(gated.ws))) as url:
        read = gated.run(ToolCall("Read", {"file_path": str(gated.ws / "notes.txt")}))
        assert "remember the milk" in text_of(read) and not read.get("is_error")
        denied = gated.run(ToolCall("Bash", {"command": "rm -f ledger",
                                             "description": "Remove the ledger"}))
        assert denied.get("is_error") and ledger.read_text() == "kept\n"

        write = ToolCall("Bash", {"command": "echo hi > ledger", "description": "Write it"})
        waited = gated.run(write)
        (pending,) = [r for r in gated.requests() if r["status"] == "pending"]
        assert waited.get("is_error") and pending["id"] in text_of(waited)
        assert f"{url}/requests/{pending['id']}" in text_of(waited)
        assert (pending["agent"], pending["principal"], pending["thread_id"]) == (
            "claude-code", "claude-code-bot", waited["session"])
        gated.approve(pending["id"])
        ran = gated.run(write, resume=str(waited["session"]))
        assert not ran.get("is_error"), text_of(ran)
        assert ledger.read_text() == "hi\n"
        (finished,) = [r for r in gated.requests() if r["id"] == pending["id"]]
        assert finished["status"] == "succeeded"  # the PostToolUse event reported it
