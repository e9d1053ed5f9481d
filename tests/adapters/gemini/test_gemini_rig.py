"""The real Gemini CLI (pinned, from npm) against the local scripted Gemini API.

Gemini CLI runs command hooks from settings.json: ``BeforeTool`` (answered with
``{"decision": "deny", "reason": …}`` on stdout, or exit 2) and ``AfterTool``. These
prove the rig with a trivial recording hook: allowed, the scripted command runs;
denied (by decision or exit 2), it never runs; a hook that fails otherwise (exit 1, a
timeout) lets the call run — which is why signoff's installed command ends in exit 2
and its timeout outlasts ``--wait``; headless without yolo the shell tool is not even
offered, and an ask hangs; project hooks need a trusted workspace; an MCP tool is hooked
as ``mcp_<server>_<tool>``; the hook sees the session, tool and input; nothing leaves
loopback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gemini_api import FINAL_TEXT, FunctionCall, GeminiServer, function_responses
from gemini_rig import (
    DATA,
    HEADLESS,
    RECORD_HOOK,
    VERSION,
    GeminiProject,
    GeminiRun,
    gemini_bin,
    hook_entry,
    python_command,
    quiet_env,
)

pytestmark = pytest.mark.slow

LEDGER_CALL = FunctionCall("run_shell_command", {"command": "echo hi > ledger"})
#: The MCP server the proxy's tests use (the official SDK's low-level Server, stdio).
UPSTREAM = Path(__file__).parents[1] / "mcp" / "upstream.py"


@pytest.fixture(scope="session")
def gemini() -> Path:
    return gemini_bin()


def hooked(tmp_path: Path, *, timeout_ms: int | None = None,
           project_level: bool = False) -> GeminiProject:
    project = GeminiProject(tmp_path)
    entry = [hook_entry(python_command(RECORD_HOOK), timeout_ms=timeout_ms)]
    hooks = {"hooks": {"BeforeTool": entry, "AfterTool": entry}}
    if project_level:
        (project.dir / ".gemini").mkdir()
        (project.dir / ".gemini" / "settings.json").write_text(json.dumps(hooks))
    else:
        project.user_settings(hooks)
    return project


def scripted(project: GeminiProject, *args: str, headless: bool = True,
             **env: str) -> tuple[GeminiRun, GeminiServer, list[Any]]:
    log = project.root / "hook.log"
    with GeminiServer([LEDGER_CALL]) as server:
        if headless:
            run = project.run(server, "Write the ledger.", *args,
                              env={"RIG_HOOK_LOG": str(log), **env})
        else:  # the default approval mode, to see what the CLI offers then
            full = {"PATH": os.environ.get("PATH", ""), "HOME": str(project.home),
                    "RIG_HOOK_LOG": str(log), **quiet_env(server.url)}
            done = subprocess.run(
                [str(gemini_bin()), "-p", "Write the ledger.",
                 *[a for a in HEADLESS if a not in ("--approval-mode", "yolo")]],
                cwd=project.dir, env=full, stdin=subprocess.DEVNULL, capture_output=True,
                text=True, timeout=120, check=False)
            run = GeminiRun(done.returncode, json.loads(done.stdout or "{}"), done.stdout,
                            done.stderr)
    assert run.returncode == 0, run.stderr
    assert server.script.escapes() == [], "the CLI tried to reach beyond loopback"
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return run, server, events


def last_response(server: GeminiServer) -> dict[str, Any]:
    """What the CLI sent the model as the scripted call's result."""
    turns = server.script.turns()
    assert len(turns) == 2, [s.path for s in server.script.seen]
    (response,) = function_responses(turns[-1].body)
    assert response["name"] == LEDGER_CALL.name
    result: dict[str, Any] = response["response"]
    return result


def test_the_pinned_cli_is_the_one_that_runs(gemini: Path) -> None:
    out = subprocess.run([str(gemini), "--version"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == VERSION


def test_an_allowed_command_runs_and_the_hook_sees_it(gemini: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path)
    run, server, events = scripted(project, RIG_HOOK_DECISION="allow")
    assert (project.dir / "ledger").read_text() == "hi\n"
    assert run.result["response"] == FINAL_TEXT
    pre, post = events
    assert pre["hook_event_name"] == "BeforeTool" and post["hook_event_name"] == "AfterTool"
    assert pre["session_id"] == post["session_id"] == run.result["session_id"]
    assert pre["tool_name"] == "run_shell_command"
    assert pre["tool_input"] == {"command": "echo hi > ledger"} == post["tool_input"]
    assert pre["cwd"] == str(project.dir)
    assert "llmContent" in post["tool_response"] and "error" not in post["tool_response"]
    assert "error" not in last_response(server)
    if os.environ.get("RIG_RECORD"):
        DATA.mkdir(exist_ok=True)
        (DATA / "beforetool.json").write_text(json.dumps(pre, indent=2) + "\n")
        (DATA / "aftertool.json").write_text(json.dumps(post, indent=2) + "\n")


def test_a_denied_command_never_runs_and_the_model_reads_why(
        gemini: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path)
    _, server, events = scripted(project, RIG_HOOK_DECISION="deny")
    assert not (project.dir / "ledger").exists()
    assert [e["hook_event_name"] for e in events] == ["BeforeTool"]  # no AfterTool
    assert last_response(server) == {"error": "Tool execution blocked: rig hook says deny"}


def test_exit_2_blocks_with_stderr_as_the_reason(gemini: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path)
    _, server, _ = scripted(project, RIG_HOOK_EXIT="2")
    assert not (project.dir / "ledger").exists()
    assert "rig hook exits 2" in json.dumps(last_response(server))


@pytest.mark.parametrize("how", ["exit 1", "timeout"])
def test_a_hook_that_fails_otherwise_lets_the_call_run(
        gemini: Path, tmp_path: Path, how: str) -> None:
    """Exit codes other than 0 and 2, and a hook past its timeout, are warnings: the
    call runs. signoff's installed command turns any failure to start into exit 2."""
    if how == "exit 1":
        project = hooked(tmp_path)
        scripted(project, RIG_HOOK_EXIT="1")
    else:
        project = hooked(tmp_path, timeout_ms=1000)
        scripted(project, RIG_HOOK_SLEEP="3", RIG_HOOK_DECISION="deny")
    assert (project.dir / "ledger").read_text() == "hi\n"


def test_project_hooks_run_in_a_trusted_workspace(gemini: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path, project_level=True)
    _, _, events = scripted(project, RIG_HOOK_DECISION="deny")
    assert [e["hook_event_name"] for e in events] == ["BeforeTool"]
    assert not (project.dir / "ledger").exists()


def test_headless_without_yolo_the_shell_is_not_offered(gemini: Path, tmp_path: Path) -> None:
    """The CLI's own confirmation cannot be answered headless, so it drops such tools."""
    project = hooked(tmp_path)
    _, server, events = scripted(project, headless=False)
    assert events == [] and not (project.dir / "ledger").exists()
    assert "not found" in last_response(server)["error"]


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_an_mcp_tool_passes_the_hook_by_its_prefixed_name(
        gemini: Path, tmp_path: Path, decision: str) -> None:
    """An MCP server's tool is offered and hooked as ``mcp_<server>_<tool>``; the hook
    input adds ``mcp_context``; a deny keeps the server's tool from running."""
    project = GeminiProject(tmp_path)
    ledger = tmp_path / "mcp-ledger"
    entry = [hook_entry(python_command(RECORD_HOOK))]
    project.user_settings({
        "hooks": {"BeforeTool": entry, "AfterTool": entry},
        "mcpServers": {"up": {"command": sys.executable, "args": [str(UPSTREAM)],
                              "env": {"UPSTREAM_LEDGER": str(ledger)}}}})
    log = tmp_path / "hook.log"
    with GeminiServer([FunctionCall("mcp_up_note", {"text": "hello"})]) as server:
        run = project.run(server, "Note it.",
                          env={"RIG_HOOK_LOG": str(log), "RIG_HOOK_DECISION": decision})
    assert run.returncode == 0, run.stderr
    assert server.script.escapes() == []
    offered = {f["name"] for tool in server.script.turns()[0].body["tools"]
               for f in tool["functionDeclarations"]}
    assert {"mcp_up_peek", "mcp_up_note"} <= offered
    events = [json.loads(line) for line in log.read_text().splitlines()]
    pre = events[0]
    assert (pre["tool_name"], pre["tool_input"]) == ("mcp_up_note", {"text": "hello"})
    assert pre["mcp_context"]["server_name"] == "up" and \
        pre["mcp_context"]["tool_name"] == "note"
    if decision == "allow":
        assert ledger.read_text() == "note:hello\n"
        assert events[1]["hook_event_name"] == "AfterTool"
        if os.environ.get("RIG_RECORD"):
            (DATA / "beforetool_mcp.json").write_text(json.dumps(pre, indent=2) + "\n")
    else:
        assert not ledger.exists() and len(events) == 1


def test_an_ask_headless_waits_for_a_prompt_nobody_can_answer(
        gemini: Path, tmp_path: Path) -> None:
    """``{"decision": "ask"}`` hands the call to Gemini CLI's own confirmation, which a
    headless run cannot show: the run hangs (and the call does not run) until killed.
    So ``--ask-locally`` is for the interactive CLI only."""
    project = hooked(tmp_path)
    log = tmp_path / "hook.log"
    with GeminiServer([LEDGER_CALL]) as server:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(project.home),
               "RIG_HOOK_LOG": str(log), "RIG_HOOK_DECISION": "ask", **quiet_env(server.url)}
        process = subprocess.Popen([str(gemini), "-p", "Write the ledger.", *HEADLESS],
                                   cwd=project.dir, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        try:
            with pytest.raises(subprocess.TimeoutExpired):
                process.wait(timeout=20)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        assert server.script.escapes() == []
    assert [json.loads(line)["hook_event_name"] for line in log.read_text().splitlines()] \
        == ["BeforeTool"]
    assert not (project.dir / "ledger").exists()
