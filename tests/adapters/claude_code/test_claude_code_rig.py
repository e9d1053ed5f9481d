"""The real Claude Code CLI (pinned, from npm) against the local scripted Messages API.

These prove the rig the hook tests stand on, with a trivial hook of its own
(record_hook.py): the scripted Bash call runs when a ``PreToolUse`` hook allows it,
never runs when it denies (even with the CLI's own permissions wide open), the hook
sees the session, tool and input the recorded fixture shows, and nothing tries to
leave loopback. They also pin down what a gating hook must not do: a crash (exit 1)
or a timeout lets the call through to the CLI's own permission rules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_rig import (
    DATA,
    RECORD_HOOK,
    VERSION,
    Project,
    Run,
    claude_bin,
    hook_entry,
    python_command,
)
from messages_api import FINAL_TEXT, MessagesServer, ToolCall, tool_results

pytestmark = pytest.mark.slow

LEDGER_CALL = ToolCall("Bash", {"command": "echo hi > ledger", "description": "Write the ledger"})
#: Claude Code's own permissions opened wide, so only the hook stands in the way
#: (``--dangerously-skip-permissions`` refuses to run as root unless IS_SANDBOX is set).
OPEN = ("--dangerously-skip-permissions",)
OPEN_ENV = {"IS_SANDBOX": "1"}


@pytest.fixture(scope="session")
def claude() -> Path:
    return claude_bin()


def hooked(tmp_path: Path, timeout: int | None = None) -> Project:
    project = Project(tmp_path)
    command = python_command(RECORD_HOOK)
    project.settings({"hooks": {"PreToolUse": [hook_entry(command, timeout=timeout)],
                                "PostToolUse": [hook_entry(command)]}})
    return project


def scripted(project: Project, *args: str, **env: str) -> tuple[Run, MessagesServer, list[Any]]:
    """One run of the ledger script; returns the run, the server and the hook's events."""
    log = project.root / "hook.log"
    with MessagesServer([LEDGER_CALL]) as server:
        run = project.run(server, "Write the ledger.", *args,
                          env={"RIG_HOOK_LOG": str(log), **env})
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    assert server.script.escapes() == [], "the CLI tried to reach beyond loopback"
    return run, server, events


def last_result(server: MessagesServer) -> dict[str, Any]:
    """The tool_result the CLI sent the model after the scripted call."""
    turns = server.script.turns()
    assert len(turns) == 2, [s.path for s in server.script.seen]
    (result,) = tool_results(turns[-1].body)
    return result


def test_the_pinned_cli_is_the_one_that_runs(claude: Path) -> None:
    out = subprocess.run([str(claude), "--version"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.split()[0] == VERSION


def test_an_allowed_call_runs_and_the_hook_sees_session_tool_and_input(
        claude: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path)
    run, server, events = scripted(project, RIG_HOOK_DECISION="allow")
    assert run.returncode == 0, run.stderr
    assert run.result["result"] == FINAL_TEXT and run.result["permission_denials"] == []
    assert (project.dir / "ledger").read_text() == "hi\n"
    pre, post = events
    assert pre["hook_event_name"] == "PreToolUse" and post["hook_event_name"] == "PostToolUse"
    assert pre["session_id"] == post["session_id"] == run.result["session_id"]
    assert pre["tool_name"] == "Bash" and pre["tool_input"] == LEDGER_CALL.input
    assert pre["cwd"] == str(project.dir)
    assert pre["tool_use_id"] == post["tool_use_id"] == last_result(server)["tool_use_id"]
    assert post["tool_response"]["interrupted"] is False
    # the recorded fixture has the shape this CLI sends (the hook command reads it)
    for name, live in (("pretooluse.json", pre), ("posttooluse.json", post)):
        recorded = json.loads((DATA / name).read_text())
        assert set(recorded) == set(live), name


def test_a_denied_call_never_runs_even_with_permissions_bypassed(
        claude: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path)
    run, server, events = scripted(project, *OPEN, RIG_HOOK_DECISION="deny", **OPEN_ENV)
    assert run.returncode == 0, run.stderr
    assert not (project.dir / "ledger").exists()
    assert [e["hook_event_name"] for e in events] == ["PreToolUse"]
    result = last_result(server)
    assert result["is_error"] is True
    assert result["content"] == "PreToolUse:Bash hook error: rig hook says deny"
    assert [d["tool_input"] for d in run.result["permission_denials"]] == [LEDGER_CALL.input]


def test_exit_2_blocks_with_stderr_as_the_reason(claude: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path)
    _, server, _ = scripted(project, *OPEN, RIG_HOOK_EXIT="2", **OPEN_ENV)
    assert not (project.dir / "ledger").exists()
    assert "rig hook exits 2" in last_result(server)["content"]


def test_a_crashing_hook_fails_open_to_the_clis_own_permissions(
        claude: Path, tmp_path: Path) -> None:
    """Exit 1 is a "non-blocking error": the call goes on to Claude Code's own rules,
    so with them open it runs. A gating hook must answer deny (or exit 2) on error."""
    project = hooked(tmp_path)
    scripted(project, *OPEN, RIG_HOOK_EXIT="1", **OPEN_ENV)
    assert (project.dir / "ledger").read_text() == "hi\n"


def test_a_hook_past_its_timeout_fails_open_to_the_clis_own_permissions(
        claude: Path, tmp_path: Path) -> None:
    """A hook killed at its ``timeout`` (seconds) decides nothing: with Claude Code's
    own rules open the call runs. A waiting hook must answer before its timeout."""
    project = hooked(tmp_path, timeout=1)
    scripted(project, *OPEN, RIG_HOOK_SLEEP="4", **OPEN_ENV)
    assert (project.dir / "ledger").read_text() == "hi\n"


def test_without_a_hook_the_clis_own_rules_decide(claude: Path, tmp_path: Path) -> None:
    """The baseline: no hook, default permission mode, ``-p``: a redirect into the
    project is refused by Claude Code itself (so the allow test's ledger is the hook's)."""
    project = Project(tmp_path)
    with MessagesServer([LEDGER_CALL]) as server:
        run = project.run(server, "Write the ledger.")
    assert run.returncode == 0, run.stderr
    assert not (project.dir / "ledger").exists()
    assert last_result(server)["is_error"] is True
    assert server.script.escapes() == []


def test_the_loopback_check_sees_what_would_leave(claude: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The escape check is not vacuous: without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC
    the CLI reaches for api.anthropic.com beside the model API, and the rig's proxy logs
    (and refuses) it; with the rig's environment nothing does (the other tests)."""
    import claude_rig

    quiet = claude_rig.quiet_env
    monkeypatch.setattr(claude_rig, "quiet_env", lambda url: {
        k: v for k, v in quiet(url).items() if k != "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"})
    project = Project(tmp_path)
    with MessagesServer([LEDGER_CALL]) as server:
        project.run(server, "Write the ledger.")
    hosts = {s.path for s in server.script.escapes()}
    assert hosts and all(h.endswith(":443") for h in hosts), hosts
    assert "api.anthropic.com:443" in hosts


def file_script(project: Project) -> list[ToolCall]:
    """Write a new file, read it, edit it, then show it with Bash: one call per turn."""
    path = str(project.dir / "notes.txt")
    return [ToolCall("Write", {"file_path": path, "content": "alpha\nbeta\n"}),
            ToolCall("Read", {"file_path": path}),
            ToolCall("Edit", {"file_path": path, "old_string": "beta", "new_string": "gamma"}),
            ToolCall("Bash", {"command": "cat notes.txt > ledger", "description": "Copy"})]


def test_a_script_of_file_tools_replays_in_order(claude: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path)
    log = project.root / "hook.log"
    calls = file_script(project)
    with MessagesServer(calls) as server:
        run = project.run(server, "Take notes.",
                          env={"RIG_HOOK_LOG": str(log), "RIG_HOOK_DECISION": "allow"})
    assert run.returncode == 0, run.stderr
    assert run.result["num_turns"] == len(calls) + 1 and run.result["result"] == FINAL_TEXT
    assert (project.dir / "notes.txt").read_text() == "alpha\ngamma\n"
    assert (project.dir / "ledger").read_text() == "alpha\ngamma\n"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    pre = [e for e in events if e["hook_event_name"] == "PreToolUse"]
    assert [e["tool_name"] for e in pre] == [c.name for c in calls]
    # the hook sees the call as the CLI validated it: the model's input, defaults filled in
    for event, call in zip(pre, calls, strict=True):
        assert call.input.items() <= event["tool_input"].items(), event
    assert pre[2]["tool_input"]["replace_all"] is False
    if os.environ.get("RIG_RECORD"):
        (DATA / "file_tools.json").write_text(json.dumps(events, indent=2) + "\n")
    assert len({e["session_id"] for e in events}) == 1
    assert server.script.escapes() == []
    # every turn after the first carried one more tool_result, none an error
    results = tool_results(server.script.turns()[-1].body)
    assert [r.get("is_error", False) for r in results] == [False] * len(calls)


def test_ask_in_print_mode_is_a_denial_with_the_reason(claude: Path, tmp_path: Path) -> None:
    """``-p`` has nobody to prompt: the hook's ``ask`` refuses the call (even with the
    CLI's permissions bypassed), and the model gets the reason as the tool's error."""
    project = hooked(tmp_path)
    run, server, _ = scripted(project, *OPEN, RIG_HOOK_DECISION="ask", **OPEN_ENV)
    assert not (project.dir / "ledger").exists()
    assert last_result(server) | {"tool_use_id": None, "cache_control": None} == {
        "type": "tool_result", "content": "rig hook says ask", "is_error": True,
        "tool_use_id": None, "cache_control": None}
    assert len(run.result["permission_denials"]) == 1


def test_a_hook_may_wait_within_its_timeout(claude: Path, tmp_path: Path) -> None:
    """A hook that takes its time (a human deciding) and answers before its ``timeout``
    decides: the CLI waits for it."""
    project = hooked(tmp_path, timeout=30)
    run, server, _ = scripted(project, RIG_HOOK_DECISION="allow", RIG_HOOK_SLEEP="3")
    assert (project.dir / "ledger").read_text() == "hi\n"
    assert run.result["duration_ms"] >= 3000
    assert last_result(server)["is_error"] is False


def test_the_same_call_retried_after_a_denial_runs(claude: Path, tmp_path: Path) -> None:
    """The scripted model retries the very call the hook refused; the hook allows it the
    second time (as signoff's will once the request is approved), and it runs once."""
    project = hooked(tmp_path)
    log = project.root / "hook.log"
    with MessagesServer([LEDGER_CALL, LEDGER_CALL]) as server:
        run = project.run(server, "Write the ledger.",
                          env={"RIG_HOOK_LOG": str(log), "RIG_HOOK_DECISION": "deny allow"})
    assert run.returncode == 0, run.stderr
    assert (project.dir / "ledger").read_text() == "hi\n"
    first, second = tool_results(server.script.turns()[-1].body)
    assert first["is_error"] is True and second.get("is_error") is not True
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["hook_event_name"] for e in events] == ["PreToolUse", "PreToolUse", "PostToolUse"]
    assert events[0]["tool_input"] == events[1]["tool_input"] == LEDGER_CALL.input
    assert events[0]["tool_use_id"] != events[1]["tool_use_id"]


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_an_mcp_tool_call_reaches_the_hook_by_its_mcp_name(claude: Path, tmp_path: Path,
                                                           decision: str) -> None:
    """An MCP server's tool (the official ``everything`` server, from npm) is offered
    only through ToolSearch, yet a direct call works; the hook sees
    ``mcp__<server>__<tool>`` and an ``mcp_server`` field, and a deny refuses the call
    (the model gets the reason)."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "mcp"))
    from mcpkit import npm_servers

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"everything": {
        "command": str(npm_servers() / "mcp-server-everything"), "args": ["stdio"]}}}))
    project = hooked(tmp_path)
    log = project.root / "hook.log"
    with MessagesServer([ToolCall("mcp__everything__echo", {"message": "hello"})]) as server:
        run = project.run(server, "Echo.", "--mcp-config", str(config), "--strict-mcp-config",
                          env={"RIG_HOOK_LOG": str(log), "RIG_HOOK_DECISION": decision})
    assert run.returncode == 0, run.stderr
    pre = json.loads(log.read_text().splitlines()[0])
    assert pre["tool_name"] == "mcp__everything__echo" and pre["tool_input"] == {"message": "hello"}
    assert pre["mcp_server"]["name"] == "everything"
    result = last_result(server)
    if decision == "allow":
        assert result["content"] == [{"type": "text", "text": "Echo: hello"}]
        if os.environ.get("RIG_RECORD"):
            (DATA / "pretooluse_mcp.json").write_text(json.dumps(pre, indent=2) + "\n")
    else:
        assert result["is_error"] is True and "rig hook says deny" in result["content"]
    assert server.script.escapes() == []
