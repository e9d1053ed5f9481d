"""``signoff hook gemini`` in real processes, fed the JSON Gemini CLI writes to a hook's
stdin: allow, deny, fail closed (exit 2 when the gate cannot be opened); and ``signoff
hook install gemini`` merging into an existing settings file, with a command that blocks
when signoff cannot start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # each runs signoff in processes of its own

SIGNOFF = [sys.executable, "-m", "signoff.cli"]
ENV = dict(os.environ)
DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ENV, "XDG_STATE_HOME", str(tmp_path / "state"))


def run(*argv: str, stdin: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SIGNOFF, *argv], input=stdin, capture_output=True, text=True,
                          timeout=timeout, check=False, env=ENV)


def event(tool: str, args: dict[str, Any]) -> str:
    recorded = json.loads((DATA / "beforetool.json").read_text("utf-8"))
    return json.dumps({**recorded, "tool_name": tool, "tool_input": args})


def test_allow_deny_and_fail_closed(tmp_path: Path) -> None:
    policy, db = tmp_path / "signoff.toml", tmp_path / "signoff.db"
    ws = tmp_path / "ws"
    ws.mkdir()
    assert run("init", str(policy), "--root", str(ws), "--preset", "gemini").returncode == 0
    assert run("db", "migrate", "--db", str(db)).returncode == 0
    flags = ["--db", str(db), "--policy", str(policy)]
    allowed = run("hook", "gemini", *flags, stdin=event("run_shell_command", {"command": "ls"}))
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["decision"] == "allow"
    denied = run("hook", "gemini", *flags, stdin=event("run_shell_command",
                                                       {"command": "rm -rf /"}))
    assert denied.returncode == 0
    assert json.loads(denied.stdout)["decision"] == "deny"
    assert "deleting files" in json.loads(denied.stdout)["reason"]
    # a database that cannot be opened: denied, and exit 2 blocks even without the JSON
    broken = run("hook", "gemini", "--db", "postgresql//typo", "--policy", str(policy),
                 stdin=event("read_file", {"file_path": "a.py"}))
    assert broken.returncode == 2 and json.loads(broken.stdout)["decision"] == "deny"
    assert "not allowed" in broken.stderr
    audit = run("audit", "export", "--db", str(db))
    assert '"call.allowed"' in audit.stdout and '"call.denied"' in audit.stdout
    assert '"call_id": "gemini-cli-' in audit.stdout  # the harness names the call


def test_install_merges_into_existing_settings(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    mine = {"model": {"name": "gemini-2.5-pro"}, "hooksConfig": {"enabled": True},
            "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [
                {"type": "command", "command": "./lint-hook.sh"}]}],
                "SessionStart": [{"hooks": [{"type": "command", "command": "say hi"}]}]}}
    settings.write_text(json.dumps(mine), "utf-8")
    argv = ["hook", "install", "gemini", "--project", "--dir", str(tmp_path), "--db",
            str(tmp_path / "so.db"), "--policy", str(tmp_path / "signoff.toml"), "--json"]
    first = run(*argv)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["changed"] is True
    assert json.loads((tmp_path / ".gemini" / "settings.json.bak").read_text()) == mine
    written = json.loads(settings.read_text("utf-8"))
    assert written["model"] == mine["model"] and written["hooksConfig"] == mine["hooksConfig"]
    assert written["hooks"]["SessionStart"] == mine["hooks"]["SessionStart"]
    pre = written["hooks"]["BeforeTool"]
    assert pre[0] == mine["hooks"]["BeforeTool"][0]  # the user's own hook stays first
    [ours] = pre[1]["hooks"]
    assert pre[1]["matcher"] == "*" and ours["name"] == "signoff-BeforeTool"
    assert ours["command"].startswith("signoff hook gemini --wait 45 --db ")
    assert ours["timeout"] == 60_000  # milliseconds: a hook past it lets the call run
    assert ours["command"].endswith("exit 2; }")
    [post] = written["hooks"]["AfterTool"]
    assert "--event post" in post["hooks"][0]["command"]
    assert "exit 2" not in post["hooks"][0]["command"]
    again = run(*argv)
    assert json.loads(again.stdout)["changed"] is False
    assert json.loads(settings.read_text("utf-8")) == written
    # with a server instead, ours is replaced, not added twice
    token = tmp_path / "agent.token"
    token.write_text("so_x", "utf-8")
    served = run("hook", "install", "gemini", "--dir", str(tmp_path), "--url",
                 "http://127.0.0.1:8765", "--token-file", str(token), "--wait", "100")
    assert served.returncode == 0, served.stderr
    hooks = json.loads(settings.read_text("utf-8"))["hooks"]
    assert len(hooks["BeforeTool"]) == 2 and len(hooks["AfterTool"]) == 1
    command = hooks["BeforeTool"][1]["hooks"][0]["command"]
    assert "--url http://127.0.0.1:8765 --token-file " in command and "--db" not in command
    assert hooks["BeforeTool"][1]["hooks"][0]["timeout"] == 115_000


def test_install_refuses_a_settings_file_that_is_not_json(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{broken", "utf-8")
    done = run("hook", "install", "gemini", "--dir", str(tmp_path))
    assert done.returncode == 2 and "settings_unreadable" in done.stderr
    assert settings.read_text("utf-8") == "{broken"


def test_the_installed_command_blocks_when_signoff_cannot_start(tmp_path: Path) -> None:
    """Run the installed BeforeTool command with a shell, as Gemini CLI does: a missing
    signoff exits 2 with a reason on stderr (block), never 1 or 127 (a warning: the call
    would run)."""
    done = run("hook", "install", "gemini", "--dir", str(tmp_path), "--signoff",
               str(tmp_path / "no-such-signoff"))
    assert done.returncode == 0, done.stderr
    hooks = json.loads((tmp_path / ".gemini" / "settings.json").read_text("utf-8"))["hooks"]
    command = hooks["BeforeTool"][0]["hooks"][0]["command"]
    shell = subprocess.run(["bash", "-c", command], input=event("glob", {"pattern": "*"}),
                           capture_output=True, text=True, timeout=30, check=False)
    assert shell.returncode == 2 and shell.stdout == ""
    assert "the call was not allowed" in shell.stderr


def test_install_for_the_user_writes_under_home(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setitem(ENV, "HOME", str(home))
    done = run("hook", "install", "gemini", "--user", "--db", str(tmp_path / "so.db"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"path": str(home / ".gemini" / "settings.json"),
                                       "changed": True, "backup": None}
    hooks = json.loads((home / ".gemini" / "settings.json").read_text("utf-8"))["hooks"]
    assert set(hooks) == {"BeforeTool", "AfterTool"}
