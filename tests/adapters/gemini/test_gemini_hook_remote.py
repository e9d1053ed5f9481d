"""``signoff hook gemini --url``: the hook against a real ``signoff serve`` with an agent's
token — allowed, asked and named, approved, retried, its failure reported; and a server
that is not there denies with exit 2."""

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

pytestmark = pytest.mark.slow  # a signoff serve of its own


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Live]:
    with live_server("sqlite", tmp_path, starter_toml("{root}", "gemini")) as running:
        yield running


def hook(live: Live, stdin: str, *extra: str, url: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    token = live.cwd / "bot.token"
    token.write_text(live.tokens["bot"], "utf-8")
    return subprocess.run([sys.executable, "-m", "signoff.cli", "hook", "gemini",
                           "--url", url or live.url, "--token-file", str(token), *extra],
                          input=stdin, capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ,
                                            "XDG_STATE_HOME": str(live.cwd / "state")})


def event(tool: str, args: dict[str, object], name: str = "BeforeTool", **more: object) -> str:
    return json.dumps({"session_id": "remote-session", "transcript_path": "/tmp/t.jsonl",
                       "cwd": "/tmp", "hook_event_name": name, "timestamp": "now",
                       "tool_name": tool, "tool_input": args, **more})


def decision(done: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    return answer["decision"], answer["reason"]


def test_the_hook_through_a_server(served: Live) -> None:
    assert decision(hook(served, event("run_shell_command", {"command": "git status"})))[0] \
        == "allow"
    args = {"command": "make release"}
    kind, reason = decision(hook(served, event("run_shell_command", args), "--wait", "0.5"))
    assert kind == "deny"
    with served.client("ann") as ann:
        [request] = ann.get("/api/v1/requests", params={"status": "pending"}).json()["requests"]
    assert f"{served.url}/requests/{request['id']}" in reason
    assert request["thread_id"] == "remote-session"
    served.cli("requests", "approve", request["id"], "--token", served.tokens["ann"])
    kind, reason = decision(hook(served, event("run_shell_command", args), "--wait", "5"))
    assert kind == "allow" and request["id"] in reason
    done = hook(served, event("run_shell_command", args, name="AfterTool",
                              tool_response={"llmContent": "", "returnDisplay": "",
                                             "error": {"message": "boom"}}), "--event", "post")
    assert done.returncode == 0, done.stderr
    with served.client("ann") as ann:
        shown = ann.get(f"/api/v1/requests/{request['id']}").json()
    assert shown["status"] == "failed"
    # a server that is not there: denied, never allowed
    gone = hook(served, event("run_shell_command", {"command": "git status"}),
                url="http://127.0.0.1:9")
    assert json.loads(gone.stdout)["decision"] == "deny" and "not allowed" in gone.stdout
