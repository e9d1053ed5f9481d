"""``signoff.adapters.codex``: Codex CLI's hook events (as recorded from the pinned CLI)
answered by the gate, in-process, on both backends — an allowed call gets no objection,
a deny blocks with its reason, an ask waits and names its request, the retry joins it,
bad input and an outage deny, ``--ask-locally`` is refused; ``signoff hook codex`` in a
real process fails closed on an unreachable server; ``signoff hook install codex`` merges
hooks.json and writes the trust Codex checks."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from signoff.adapters.codex import Codex, post_tool_use, pre_tool_use
from signoff.adapters.codex.hooks_file import hook_commands, install_hooks, trust_hash
from signoff.adapters.hooks import HookOptions
from signoff.kernel.gate import Gate
from signoff.model import Decision, RequestStatus
from signoff.policy import Policy
from signoff.policy.starter import starter_toml
from signoff.store.base import Store

DATA = Path(__file__).parent / "data"
SIGNOFF = [sys.executable, "-m", "signoff.cli"]
PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"


def event(tool: str, args: dict[str, Any], *, name: str = "PreToolUse",
          session: str = "01a24c35-970a-7a33-8732-572937d0c83f", use: str = "call_00",
          **more: Any) -> str:
    """An event as Codex 0.171 writes it (the recorded one, with this call's fields)."""
    recorded = json.loads((DATA / ("pretooluse.json" if name == "PreToolUse"
                                   else "posttooluse.json")).read_text("utf-8"))
    return json.dumps({**recorded, "session_id": session, "tool_name": tool,
                       "tool_input": args, "tool_use_id": use, **more})


def blocked(output: dict[str, Any] | None) -> str:
    """The reason of a deny (a ``None`` answer is no objection: the call runs)."""
    assert output is not None, "the call was let through"
    specific = output["hookSpecificOutput"]
    assert (specific["hookEventName"], specific["permissionDecision"]) == ("PreToolUse", "deny")
    reason: str = specific["permissionDecisionReason"]
    assert reason.strip()  # Codex ignores a deny without a reason
    return reason


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture
def gate(store: Store, tmp_path: Path) -> Gate:
    root = tmp_path / "ws"
    root.mkdir()
    made = Gate(Policy.from_toml(starter_toml(str(root), "codex")), store, agent="codex")
    made.add_user("alice", roles=["ops"])
    return made


@pytest.fixture
def options() -> HookOptions:
    return HookOptions(agent="codex", principal="os:dev", wait_seconds=0.3)


def test_allowed_runs_and_denied_blocks(gate: Gate, options: HookOptions) -> None:
    assert pre_tool_use(gate, event("Bash", {"command": "ls -la"}), options) is None
    assert Codex().pre(gate, event("Bash", {"command": "ls"}).encode(), options).stdout == ""
    reason = blocked(pre_tool_use(gate, event("Bash", {"command": "rm -rf src"}), options))
    assert "not allowed" in reason


def test_an_undecided_ask_names_its_request_and_the_retry_joins_it(
        gate: Gate, options: HookOptions) -> None:
    args = {"command": PATCH}
    reason = blocked(pre_tool_use(gate, event("apply_patch", args), options))
    [request] = gate.pending_on_thread("01a24c35-970a-7a33-8732-572937d0c83f")
    assert request.id in reason and request.tool == "apply_patch"
    assert json.loads(request.args) == args  # the approver reads the patch
    assert request.agent == "codex"
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(request.id, Decision.approve(), identity=alice)
    assert pre_tool_use(gate, event("apply_patch", args, use="call_01"), options) is None
    out = "Exit code: 0\nOutput:\nSuccess. Updated the following files:\nM a.py\n"
    assert post_tool_use(gate, event("apply_patch", args, name="PostToolUse",
                                     use="call_01", tool_response=out), options) == request.id
    assert gate.get_request(request.id).status is RequestStatus.SUCCEEDED


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[]",
                                   json.dumps({"hook_event_name": "PostToolUse",
                                               "session_id": "s", "tool_name": "Bash",
                                               "tool_input": {}}).encode(),
                                   json.dumps({"hook_event_name": "PreToolUse",
                                               "tool_name": "Bash",
                                               "tool_input": {"command": "ls"}}).encode()])
def test_bad_input_denies(gate: Gate, stdin: bytes, options: HookOptions) -> None:
    assert "could not read the hook input" in blocked(pre_tool_use(gate, stdin, options))


class Broken:
    def propose(self, *_: Any, **__: Any) -> Any:
        raise ConnectionError("the database is down")


def test_an_outage_denies(options: HookOptions) -> None:
    reason = blocked(pre_tool_use(Broken(), event("Bash", {"command": "ls"}),  # type: ignore[arg-type]
                                  options))
    assert "the database is down" in reason


def test_ask_locally_is_refused(gate: Gate) -> None:
    local = HookOptions(agent="codex", principal="os:dev", ask_locally=True)
    reply = Codex().pre(gate, event("Bash", {"command": "ls"}).encode(), local)
    assert "--ask-locally is not supported for codex" in blocked(json.loads(reply.stdout))
    assert reply.exit_code == 0  # Codex reads a deny only from exit 0
    assert "--ask-locally is not supported" in reply.stderr
    assert gate.list_requests() == []


def hook_process(*argv: str, stdin: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SIGNOFF, "hook", "codex", *argv], input=stdin, capture_output=True,
                          text=True, timeout=60, check=False, env=env)


def test_an_unreachable_server_denies_in_a_real_process(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    done = hook_process("--url", "http://127.0.0.1:9", "--token", "t", "--wait", "1",
                        stdin=event("Bash", {"command": "ls"}), env=env)
    assert done.returncode == 0, done.stderr  # Codex reads a deny only from exit 0
    assert "not allowed" in blocked(json.loads(done.stdout))
    missing = hook_process("--db", str(tmp_path / "none" / "x.db"), "--policy",
                           str(tmp_path / "nope.toml"), stdin=event("Bash", {"command": "ls"}),
                           env=env)
    assert missing.returncode == 0 and "not reachable" in blocked(json.loads(missing.stdout))


def test_install_merges_keeps_the_users_hooks_and_trusts_only_ours(tmp_path: Path) -> None:
    hooks, config = tmp_path / "hooks.json", tmp_path / "config.toml"
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}
    hooks.write_text(json.dumps({"hooks": {"PreToolUse": [theirs]}, "other": 1}))
    config.write_text('model = "gpt-5.5"\n\n[hooks.state."/x/hooks.json:stop:0:0"]\n'
                      'trusted_hash = "sha256:00"\n')
    commands = hook_commands(["signoff"])
    changed, backup = install_hooks(hooks, config, commands, extra=["--wait", "3"], timeout=18)
    assert changed and backup is not None and json.loads(backup.read_text())["other"] == 1
    data = json.loads(hooks.read_text())
    assert data["other"] == 1 and data["hooks"]["PreToolUse"][0] == theirs
    ours = data["hooks"]["PreToolUse"][1]
    assert ours["hooks"][0]["command"].startswith("signoff hook codex --wait 3 || {")
    assert ours["hooks"][0]["timeout"] == 18
    state = tomllib.loads(config.read_text())
    assert state["model"] == "gpt-5.5"
    assert state["hooks"]["state"] == {
        "/x/hooks.json:stop:0:0": {"trusted_hash": "sha256:00"},
        f"{hooks}:pre_tool_use:1:0": {"trusted_hash": trust_hash("PreToolUse", ours)},
        f"{hooks}:post_tool_use:0:0": {
            "trusted_hash": trust_hash("PostToolUse", data["hooks"]["PostToolUse"][0])}}
    before = (hooks.read_text(), config.read_text())
    assert install_hooks(hooks, config, commands, extra=["--wait", "3"], timeout=18) == \
        (False, None)
    assert (hooks.read_text(), config.read_text()) == before
    # another wait is another command: its trust replaces ours, nothing piles up
    install_hooks(hooks, config, commands, extra=["--wait", "5"], timeout=20)
    again = tomllib.loads(config.read_text())["hooks"]["state"]
    assert len(again) == 3 and len(json.loads(hooks.read_text())["hooks"]["PreToolUse"]) == 2


def test_the_trust_hash_is_codexs() -> None:
    """The hash Codex computed for a hook (recorded by trusting it in Codex 0.171):
    compact, key-sorted JSON of event, matcher and the handler with its defaults."""
    entry = {"matcher": "*", "hooks": [{"type": "command", "command": "echo hi"}]}
    identity = ('{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"echo hi",'
                '"timeout":600,"type":"command"}],"matcher":"*"}')
    assert trust_hash("PreToolUse", entry) == \
        "sha256:" + hashlib.sha256(identity.encode()).hexdigest()


def test_install_refuses_a_config_codex_could_not_read(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("model = \n")
    with pytest.raises(ValueError):
        install_hooks(tmp_path / "hooks.json", config, hook_commands(["signoff"]), timeout=60)
    assert not (tmp_path / "hooks.json").exists()
    assert config.read_text() == "model = \n"


def test_install_codex_from_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    env = {**os.environ, "CODEX_HOME": str(home), "HOME": str(tmp_path)}
    done = subprocess.run([*SIGNOFF, "hook", "install", "codex", "--user", "--db",
                           str(tmp_path / "so.db"), "--json"], capture_output=True, text=True,
                          timeout=60, check=False, env=env)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["path"] == str(home / "hooks.json") and out["changed"] is True
    assert out["trust"] == str(home / "config.toml")
    hooks = json.loads((home / "hooks.json").read_text())["hooks"]
    command = hooks["PreToolUse"][0]["hooks"][0]["command"]
    assert f"--db {tmp_path / 'so.db'}" in command
    # the command as Codex runs it (sh -c), with signoff gone from it: exit 2 and a reason
    broken = command.replace(" ".join(["signoff", "hook"]), "/nonexistent/signoff hook", 1)
    shell = subprocess.run(["sh", "-c", broken], input=event("Bash", {"command": "ls"}),
                           capture_output=True, text=True, timeout=30, check=False)
    assert shell.returncode == 2 and "the call was not allowed" in shell.stderr
    project = subprocess.run([*SIGNOFF, "hook", "install", "codex", "--dir", str(tmp_path),
                              "--db", str(tmp_path / "so.db")], capture_output=True,
                             text=True, timeout=60, check=False, env=env)
    assert project.returncode == 0, project.stderr
    assert (tmp_path / ".codex" / "hooks.json").exists()
    assert "trust_level" in project.stdout  # the step Codex needs for a project's hooks


def test_install_names_the_other_pre_tool_use_hooks(tmp_path: Path) -> None:
    """Another PreToolUse hook may rewrite a call signoff judged (``updatedInput``,
    test_codex_rig.py): the installer names each one."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "fmt-hook.sh"}]}]}}))
    env = {**os.environ, "CODEX_HOME": str(home), "HOME": str(tmp_path)}
    done = subprocess.run([*SIGNOFF, "hook", "install", "codex", "--user", "--db",
                           str(tmp_path / "so.db"), "--json"], capture_output=True, text=True,
                          timeout=60, check=False, env=env)
    assert done.returncode == 0, done.stderr
    (note,) = json.loads(done.stdout)["notes"]
    assert "fmt-hook.sh" in note and "updatedInput" in note
