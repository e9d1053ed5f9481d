"""``signoff hook claude-code --url``: the hook against a real ``signoff serve`` with an
agent's token — allowed, asked and named, approved, retried, its result reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

from procs import Live, live_server

from signoff.policy.starter import starter_toml

pytestmark = pytest.mark.slow  # a real server and hook processes


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Live]:
    with live_server("sqlite", tmp_path, starter_toml("{root}", "claude-code")) as running:
        yield running


def hook(live: Live, stdin: str, *extra: str) -> subprocess.CompletedProcess[str]:
    token = live.cwd / "bot.token"
    token.write_text(live.tokens["bot"], "utf-8")
    return subprocess.run([sys.executable, "-m", "signoff.cli", "hook", "claude-code",
                           "--url", live.url, "--token-file", str(token), *extra],
                          input=stdin, capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ,
                                            "XDG_STATE_HOME": str(live.cwd / "state")})


def event(tool: str, args: dict[str, object], name: str = "PreToolUse", **more: object) -> str:
    return json.dumps({"session_id": "remote-session", "transcript_path": "/tmp/t.jsonl",
                       "cwd": "/tmp", "hook_event_name": name, "tool_name": tool,
                       "tool_input": args, "tool_use_id": "toolu_x", **more})


def decision(done: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    assert done.returncode == 0, done.stderr
    specific = json.loads(done.stdout)["hookSpecificOutput"]
    return specific["permissionDecision"], specific["permissionDecisionReason"]


def test_the_hook_through_a_server(served: Live) -> None:
    assert decision(hook(served, event("Bash", {"command": "git status"})))[0] == "allow"
    args = {"command": "make release"}
    kind, reason = decision(hook(served, event("Bash", args), "--wait", "0.5"))
    assert kind == "deny"
    with served.client("ann") as ann:
        [request] = ann.get("/api/v1/requests", params={"status": "pending"}).json()["requests"]
    assert f"{served.url}/requests/{request['id']}" in reason
    assert request["thread_id"] == "remote-session"
    served.cli("requests", "approve", request["id"], "--token", served.tokens["ann"])
    kind, reason = decision(hook(served, event("Bash", args), "--wait", "5"))
    assert kind == "allow" and request["id"] in reason
    done = hook(served, event("Bash", args, name="PostToolUse",
                              tool_response={"stdout": "", "stderr": "boom",
                                             "is_error": True}), "--event", "post")
    assert done.returncode == 0, done.stderr
    with served.client("ann") as ann:
        shown = ann.get(f"/api/v1/requests/{request['id']}").json()
    assert shown["status"] == "failed"
