"""``signoff hook claude-code`` in real processes, fed the JSON Claude Code writes to a
hook's stdin: allow, deny, fail closed, an ask approved with ``signoff requests approve``
from another process while the hook waits, a timed-out ask joined by its retry; and
``signoff hook install claude-code`` merging into an existing settings file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # real hook processes, seconds each

SIGNOFF = [sys.executable, "-m", "signoff.cli"]
ENV = dict(os.environ)


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hooks' claims (``claims``) under this test's directory."""
    monkeypatch.setitem(ENV, "XDG_STATE_HOME", str(tmp_path / "state"))


def run(*argv: str, stdin: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SIGNOFF, *argv], input=stdin, capture_output=True, text=True,
                          timeout=timeout, check=False, env=ENV)


def event(tool: str, args: dict[str, Any], *, name: str = "PreToolUse", use: str = "toolu_1",
          **more: Any) -> str:
    return json.dumps({"session_id": "9f1c-session", "transcript_path": "/tmp/t.jsonl",
                       "cwd": "/tmp", "permission_mode": "default", "hook_event_name": name,
                       "tool_name": tool, "tool_input": args, "tool_use_id": use, **more})


class Project:
    def __init__(self, root: Path) -> None:
        self.ws = root / "ws"
        self.ws.mkdir()
        self.policy = root / "signoff.toml"
        self.db = root / "signoff.db"
        assert run("init", str(self.policy), "--root", str(self.ws), "--preset",
                   "claude-code").returncode == 0
        assert run("db", "migrate", "--db", str(self.db)).returncode == 0
        added = run("users", "add", "alice", "--roles", "ops", "--db", str(self.db), "--json")
        assert added.returncode == 0, added.stderr
        self.token = root / "alice.token"
        self.token.write_text(json.loads(added.stdout)["token"], "utf-8")

    def flags(self) -> list[str]:
        return ["--db", str(self.db), "--policy", str(self.policy)]

    def hook(self, stdin: str, *extra: str) -> tuple[str, str]:
        done = run("hook", "claude-code", *self.flags(), *extra, stdin=stdin)
        assert done.returncode == 0, done.stderr
        return decision(done.stdout)

    def pending(self) -> list[dict[str, Any]]:
        listed = run("requests", "list", "--status", "pending", "--json", *self.flags())
        assert listed.returncode == 0, listed.stderr
        return list(json.loads(listed.stdout))

    def approve(self, request_id: str) -> None:
        done = run("requests", "approve", request_id, "--token-file", str(self.token),
                   *self.flags())
        assert done.returncode == 0, done.stderr

    def status(self, request_id: str) -> str:
        shown = run("requests", "show", request_id, "--json", *self.flags())
        assert shown.returncode == 0, shown.stderr
        return str(json.loads(shown.stdout)["status"])


def decision(stdout: str) -> tuple[str, str]:
    specific = json.loads(stdout)["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    return specific["permissionDecision"], specific["permissionDecisionReason"]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def test_allow_deny_and_fail_closed(project: Project) -> None:
    assert project.hook(event("Bash", {"command": "git status"}))[0] == "allow"
    assert project.hook(event("Read", {"file_path": str(project.ws / "a.py")}))[0] == "allow"
    kind, reason = project.hook(event("Bash", {"command": "rm -rf /"}))
    assert kind == "deny" and "deleting files" in reason
    kind, reason = project.hook("{not json")
    assert kind == "deny" and "could not read the hook input" in reason
    # a server that is not there: denied, never allowed
    kind, reason = project.hook(event("Bash", {"command": "git status"}), "--url",
                                "http://127.0.0.1:9", "--token", "so_x")
    assert kind == "deny" and "not allowed" in reason
    # a database that cannot be opened
    done = run("hook", "claude-code", "--db", "postgresql//typo", "--policy",
               str(project.policy), stdin=event("Bash", {"command": "ls"}))
    assert done.returncode == 0 and decision(done.stdout)[0] == "deny"
    # the verdicts are in the audit once the hook's process ended
    audit = run("audit", "export", "--db", str(project.db))
    assert audit.returncode == 0, audit.stderr
    assert audit.stdout.count('"call.allowed"') == 2 and '"call.denied"' in audit.stdout


def test_ask_approved_from_another_process_while_the_hook_waits(project: Project) -> None:
    args = {"command": "make build"}
    with subprocess.Popen([*SIGNOFF, "hook", "claude-code", *project.flags(), "--wait",
                           "60"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=ENV) as waiting:
        try:
            assert waiting.stdin is not None
            waiting.stdin.write(event("Bash", args))
            waiting.stdin.close()
            deadline = time.monotonic() + 30
            pending: list[dict[str, Any]] = []
            while not pending and time.monotonic() < deadline:
                pending = project.pending()
            [request] = pending
            assert (request["tool"], request["agent"], request["thread_id"]) == \
                ("Bash", "claude-code", "9f1c-session")
            assert waiting.poll() is None  # still waiting for a human
            project.approve(request["id"])
            assert waiting.stdout is not None and waiting.stderr is not None
            waiting.wait(timeout=30)
            out, err = waiting.stdout.read(), waiting.stderr.read()
        finally:
            if waiting.poll() is None:
                waiting.kill()
                waiting.wait()
    assert waiting.returncode == 0, err
    kind, reason = decision(out)
    assert kind == "allow" and request["id"] in reason
    assert project.status(request["id"]) == "executing"
    done = run("hook", "claude-code", "--event", "post", *project.flags(),
               stdin=event("Bash", args, name="PostToolUse",
                           tool_response={"stdout": "built", "stderr": "",
                                          "interrupted": False}))
    assert done.returncode == 0, done.stderr
    assert project.status(request["id"]) == "succeeded"
    verified = run("audit", "verify", "--db", str(project.db))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_timed_out_ask_names_the_request_and_its_retry_runs_once_approved(
        project: Project) -> None:
    args = {"file_path": str(project.ws / "app.py"), "content": "print('hi')\n"}
    kind, reason = project.hook(event("Write", args, use="toolu_A"), "--wait", "0.5",
                                "--inbox-url", "http://127.0.0.1:8765/")
    [request] = project.pending()
    assert kind == "deny"
    assert f"http://127.0.0.1:8765/requests/{request['id']}" in reason
    assert "+print('hi')" in json.dumps(request)  # the write's diff is in the request
    project.approve(request["id"])
    kind, reason = project.hook(event("Write", args, use="toolu_B"), "--wait", "0.5")
    assert kind == "allow" and request["id"] in reason
    assert project.pending() == []


def test_install_merges_into_existing_settings(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {"model": "opus", "permissions": {"allow": ["Bash(npm test)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "./lint-hook.sh"}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    settings.write_text(json.dumps(mine), "utf-8")
    argv = ["hook", "install", "claude-code", "--project", "--dir", str(tmp_path), "--db",
            str(tmp_path / "so.db"), "--policy", str(tmp_path / "signoff.toml"), "--json"]
    first = run(*argv)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["changed"] is True
    assert json.loads((tmp_path / ".claude" / "settings.json.bak").read_text()) == mine
    written = json.loads(settings.read_text("utf-8"))
    assert written["model"] == "opus" and written["permissions"] == mine["permissions"]
    assert written["hooks"]["Stop"] == mine["hooks"]["Stop"]
    pre = written["hooks"]["PreToolUse"]
    assert pre[0] == mine["hooks"]["PreToolUse"][0]  # the user's own hook stays first
    assert pre[1]["matcher"] == "*"
    [ours] = pre[1]["hooks"]
    assert ours["command"].startswith("signoff hook claude-code --wait 45 --db ")
    assert ours["timeout"] == 60
    assert ours["command"].endswith(" || exit 2")  # a hook that cannot start blocks
    [post] = written["hooks"]["PostToolUse"]
    assert "--event post" in post["hooks"][0]["command"]
    assert "exit 2" not in post["hooks"][0]["command"]
    # again: nothing changes
    again = run(*argv)
    assert json.loads(again.stdout)["changed"] is False
    assert json.loads(settings.read_text("utf-8")) == written
    # with a server instead, ours is replaced, not added twice
    token = tmp_path / "agent.token"
    token.write_text("so_x", "utf-8")
    served = run("hook", "install", "claude-code", "--dir", str(tmp_path), "--url",
                 "http://127.0.0.1:8765", "--token-file", str(token), "--wait", "100")
    assert served.returncode == 0, served.stderr
    hooks = json.loads(settings.read_text("utf-8"))["hooks"]
    assert len(hooks["PreToolUse"]) == 2 and len(hooks["PostToolUse"]) == 1
    command = hooks["PreToolUse"][1]["hooks"][0]["command"]
    assert "--url http://127.0.0.1:8765 --token-file " in command and "--db" not in command
    assert hooks["PreToolUse"][1]["hooks"][0]["timeout"] == 115


def test_install_refuses_a_settings_file_that_is_not_json(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{broken", "utf-8")
    done = run("hook", "install", "claude-code", "--dir", str(tmp_path))
    assert done.returncode == 2 and "settings_unreadable" in done.stderr
    assert settings.read_text("utf-8") == "{broken"


def test_the_installed_command_blocks_when_signoff_cannot_start(tmp_path: Path) -> None:
    """Run the installed PreToolUse command with a shell, as Claude Code does: a missing
    signoff exits 2 (block), never 1 or 127 (a non-blocking error: the call would run)."""
    done = run("hook", "install", "claude-code", "--dir", str(tmp_path), "--signoff",
               str(tmp_path / "no-such-signoff"))
    assert done.returncode == 0, done.stderr
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text("utf-8"))["hooks"]
    command = hooks["PreToolUse"][0]["hooks"][0]["command"]
    shell = subprocess.run(["sh", "-c", command], input=event("Bash", {"command": "ls"}),
                           capture_output=True, text=True, timeout=30, check=False)
    assert shell.returncode == 2 and shell.stdout == ""


def test_install_for_the_user_writes_under_home(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setitem(ENV, "HOME", str(home))
    done = run("hook", "install", "claude-code", "--user", "--db", str(tmp_path / "so.db"),
               "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"path": str(home / ".claude" / "settings.json"),
                                       "changed": True, "backup": None}
    hooks = json.loads((home / ".claude" / "settings.json").read_text("utf-8"))["hooks"]
    assert set(hooks) == {"PreToolUse", "PostToolUse"}
