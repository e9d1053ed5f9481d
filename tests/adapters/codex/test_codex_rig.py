"""The real Codex CLI (pinned, from npm) against the local scripted Responses API.

Codex 0.171 ships Claude-Code-style command hooks (``hooks.json``, ``PreToolUse``
with ``permissionDecision``), its shell tool reported to hooks as ``Bash``. These
prove the rig with the same trivial hook the Claude Code rig uses: allowed, the
scripted command runs; denied, it never runs; the hook sees the session, tool and
input; an unreviewed hooks.json does not run at all; nothing leaves loopback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from codex_rig import DATA, RECORD_HOOK, VERSION, CodexProject, codex_bin
from responses_api import FINAL_TEXT, CustomCall, FunctionCall, ResponsesServer, outputs

pytestmark = pytest.mark.slow

LEDGER_CALL = FunctionCall("exec_command", {"cmd": "echo hi > ledger"})
TRUST = "--dangerously-bypass-hook-trust"


@pytest.fixture(scope="session")
def codex() -> Path:
    return codex_bin()


def hooked(tmp_path: Path) -> CodexProject:
    project = CodexProject(tmp_path)
    entry = [{"matcher": "*", "hooks": [{"type": "command",
                                         "command": f"{sys.executable} {RECORD_HOOK}"}]}]
    project.hooks({"hooks": {"PreToolUse": entry, "PostToolUse": entry}})
    return project


def scripted(project: CodexProject, *args: str, **env: str) -> tuple[Any, ResponsesServer,
                                                                        list[Any]]:
    log = project.root / "hook.log"
    with ResponsesServer([LEDGER_CALL]) as server:
        run = project.run(server, "Write the ledger.", *args,
                          env={"RIG_HOOK_LOG": str(log), **env})
    assert run.returncode == 0, run.stderr
    assert server.script.escapes() == [], "the CLI tried to reach beyond loopback"
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return run, server, events


def last_output(server: ResponsesServer) -> str:
    turns = server.script.turns()
    assert len(turns) == 2, [s.path for s in server.script.seen]
    (output,) = outputs(turns[-1].body)
    return str(output["output"])


def test_the_pinned_cli_is_the_one_that_runs(codex: Path) -> None:
    out = subprocess.run([str(codex), "--version"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.split()[-1] == VERSION


def test_an_allowed_command_runs_and_the_hook_sees_it(codex: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path)
    run, server, events = scripted(project, TRUST, RIG_HOOK_DECISION="allow")
    assert (project.dir / "ledger").read_text() == "hi\n"
    assert any(e.get("item", {}).get("text") == FINAL_TEXT for e in run.events)
    pre, post = events
    assert pre["hook_event_name"] == "PreToolUse" and post["hook_event_name"] == "PostToolUse"
    thread = next(e["thread_id"] for e in run.events if e["type"] == "thread.started")
    assert pre["session_id"] == post["session_id"] == thread
    assert pre["tool_name"] == "Bash" and pre["tool_input"] == {"command": "echo hi > ledger"}
    assert pre["cwd"] == str(project.dir)
    assert "exited with code 0" in last_output(server)
    if os.environ.get("RIG_RECORD"):
        (DATA / "pretooluse.json").write_text(json.dumps(pre, indent=2) + "\n")
        (DATA / "posttooluse.json").write_text(json.dumps(post, indent=2) + "\n")
    recorded = json.loads((DATA / "pretooluse.json").read_text())
    assert set(recorded) == set(pre)


def test_a_denied_command_never_runs(codex: Path, tmp_path: Path) -> None:
    project = hooked(tmp_path)
    _, server, events = scripted(project, TRUST, RIG_HOOK_DECISION="deny")
    assert not (project.dir / "ledger").exists()
    assert [e["hook_event_name"] for e in events] == ["PreToolUse"]
    assert last_output(server) == ("Command blocked by PreToolUse hook: rig hook says deny. "
                                   "Command: echo hi > ledger")


def test_an_unreviewed_hooks_file_is_not_run(codex: Path, tmp_path: Path) -> None:
    """Without persisted hook trust (or the bypass flag) Codex skips a new hooks.json
    silently: a deny hook there gates nothing. Installing a hook must also trust it."""
    project = hooked(tmp_path)
    _, _, events = scripted(project, RIG_HOOK_DECISION="deny")
    assert events == []
    assert (project.dir / "ledger").read_text() == "hi\n"


@pytest.mark.parametrize("env", [{"RIG_HOOK_EXIT": "1"}, {"RIG_HOOK_DECISION": "ask"}],
                         ids=["crash", "ask"])
def test_a_crash_or_an_ask_lets_the_command_run(codex: Path, tmp_path: Path,
                                                env: dict[str, str]) -> None:
    """Fail-open cases a gating hook must avoid under Codex: exit 1 is a non-blocking
    error, and ``ask`` is unsupported (logged, ignored): either way the command runs in
    ``codex exec``. Only deny (or exit 2) blocks."""
    project = hooked(tmp_path)
    scripted(project, TRUST, **env)
    assert (project.dir / "ledger").read_text() == "hi\n"


def test_a_hook_past_its_timeout_lets_the_command_run(codex: Path, tmp_path: Path) -> None:
    project = CodexProject(tmp_path)
    entry = [{"matcher": "*", "hooks": [{"type": "command", "timeout": 1,
                                         "command": f"{sys.executable} {RECORD_HOOK}"}]}]
    project.hooks({"hooks": {"PreToolUse": entry}})
    scripted(project, TRUST, RIG_HOOK_DECISION="deny", RIG_HOOK_SLEEP="4")
    assert (project.dir / "ledger").read_text() == "hi\n"


PATCH = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes.txt\n+alpha\n*** End Patch\nEOF"


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_a_file_edit_is_a_shell_call_the_hook_sees(codex: Path, tmp_path: Path,
                                                   decision: str) -> None:
    """Codex edits files with ``apply_patch`` through its shell tool: PreToolUse sees
    it as ``Bash`` with the whole patch (so a deny blocks the edit), but no
    PostToolUse follows an applied patch."""
    project = hooked(tmp_path)
    log = project.root / "hook.log"
    with ResponsesServer([FunctionCall("exec_command", {"cmd": PATCH})]) as server:
        run = project.run(server, "Take notes.", TRUST,
                          env={"RIG_HOOK_LOG": str(log), "RIG_HOOK_DECISION": decision})
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["hook_event_name"], e["tool_name"], e["tool_input"]) for e in events] == [
        ("PreToolUse", "Bash", {"command": PATCH})]
    assert (project.dir / "notes.txt").exists() is (decision == "allow")
    assert server.script.escapes() == []


def hook_log(project: CodexProject) -> list[tuple[str, str, Any]]:
    log = project.root / "hook.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(e["hook_event_name"], e["tool_name"], e["tool_input"])
            for e in map(json.loads, lines)]


def test_the_apply_patch_tool_passes_the_hooks_with_its_patch(codex: Path,
                                                              tmp_path: Path) -> None:
    """A model that has Codex's freeform ``apply_patch`` tool (gpt-5.5 in the bundled
    catalogue; the rig's own model has none) edits through it: both hooks see
    ``apply_patch`` with the whole patch as ``command``."""
    project = hooked(tmp_path)
    patch = "*** Begin Patch\n*** Add File: notes.txt\n+alpha\n*** End Patch\n"
    with ResponsesServer([CustomCall("apply_patch", patch)]) as server:
        run = project.run(server, "Take notes.", TRUST, model="gpt-5.5", env={
            "RIG_HOOK_LOG": str(project.root / "hook.log"), "RIG_HOOK_DECISION": "allow"})
    assert run.returncode == 0, run.stderr
    assert server.script.escapes() == []
    assert hook_log(project) == [("PreToolUse", "apply_patch", {"command": patch}),
                                 ("PostToolUse", "apply_patch", {"command": patch})]
    assert (project.dir / "notes.txt").read_text() == "alpha\n"


def test_keys_typed_into_a_running_command_pass_no_hook(codex: Path, tmp_path: Path) -> None:
    """``write_stdin`` (the model typing into a process an earlier call left running)
    reaches no hook: the line typed is run into the file, and the hooks saw only the
    command that started the process (its PostToolUse comes once it ends, during the
    ``write_stdin`` call)."""
    project = hooked(tmp_path)
    command = 'read line; echo "$line" > typed'
    start = FunctionCall("exec_command", {"cmd": command, "tty": True, "yield_time_ms": 500})

    def typed(body: dict[str, Any]) -> dict[str, Any]:
        session = re.search(r"session ID (\d+)", str(outputs(body)[-1]["output"]))
        assert session is not None, outputs(body)
        return {"session_id": int(session.group(1)), "chars": "rm -rf it\n",
                "yield_time_ms": 2000}

    with ResponsesServer([start, FunctionCall("write_stdin", typed)]) as server:
        run = project.run(server, "Type it.", TRUST, env={
            "RIG_HOOK_LOG": str(project.root / "hook.log"), "RIG_HOOK_DECISION": "allow"})
    assert run.returncode == 0, run.stderr
    assert (project.dir / "typed").read_text() == "rm -rf it\n"
    assert hook_log(project) == [("PreToolUse", "Bash", {"command": command}),
                                 ("PostToolUse", "Bash", {"command": command})]


def test_a_hook_that_allows_may_rewrite_the_call(codex: Path, tmp_path: Path) -> None:
    """``allow`` with ``updatedInput`` is honoured: Codex runs the rewritten input (and
    PostToolUse reports it), not the one every other hook was shown. A signoff approval
    covers what the model proposed: another PreToolUse hook could swap it."""
    project = hooked(tmp_path)
    _, _, events = scripted(project, TRUST, RIG_HOOK_DECISION="allow",
                            RIG_HOOK_UPDATED=json.dumps({"command": "echo swapped > ledger"}))
    assert (project.dir / "ledger").read_text() == "swapped\n"
    assert [e["tool_input"]["command"] for e in events] == ["echo hi > ledger",
                                                           "echo swapped > ledger"]
