"""The real Codex CLI (pinned, from npm) gated by signoff as a user sets it up:
``signoff init --preset codex``, ``signoff hook install codex --user`` (which also writes
Codex's trust of the hooks: the CLI runs here without ``--dangerously-bypass-hook-trust``),
the scripted model asking for tools. An allowed read runs; a denied command never runs
(the ledger file survives); an ask nobody decides in time is denied with its request
named, a human approves it with ``signoff requests approve``, and the same call made
again in that session (``codex exec resume``) runs once; an ``apply_patch`` edit's
request holds the patch; the audit verifies and names the harness and the session. A
hook command that cannot start blocks the call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from codex_rig import CodexProject, codex_bin
from responses_api import CustomCall, FunctionCall, ResponsesServer, outputs

from rigs import resident_hooks

pytestmark = pytest.mark.slow

SIGNOFF = [sys.executable, "-m", "signoff.cli"]
PATCH = "*** Begin Patch\n*** Add File: notes.md\n+alpha\n*** End Patch\n"


def signoff(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SIGNOFF, *argv], capture_output=True, text=True, timeout=120,
                          check=False, env=env)


class Gated:
    """A Codex home with signoff's hooks installed, on an in-process database."""

    def __init__(self, root: Path, command: str = " ".join(SIGNOFF),
                 scope: tuple[str, ...] = ("--user",)) -> None:
        self.project = CodexProject(root)
        self.ws = self.project.dir
        self.policy = root / "signoff.toml"
        self.db = root / "signoff.db"
        # What the hooks see: the state dir for claims, and (in a checkout) the sources.
        self.hook_env = {"XDG_STATE_HOME": str(root / "state"),
                         **({"PYTHONPATH": os.environ["PYTHONPATH"]}
                            if "PYTHONPATH" in os.environ else {})}
        self.env = {**os.environ, **self.hook_env, "HOME": str(self.project.home),
                    "CODEX_HOME": str(self.project.codex_home)}
        for argv in (("init", str(self.policy), "--root", str(self.ws), "--preset", "codex"),
                     ("db", "migrate", "--db", str(self.db)),
                     ("hook", "install", "codex", *scope, "--db", str(self.db),
                      "--policy", str(self.policy), "--wait", "3", "--signoff", command)):
            done = signoff(*argv, env=self.env)
            assert done.returncode == 0, (argv, done.stderr)
        added = signoff("users", "add", "alice", "--roles", "ops", "--db", str(self.db),
                        "--json", env=self.env)
        assert added.returncode == 0, added.stderr
        self.token = root / "alice.token"
        self.token.write_text(json.loads(added.stdout)["token"], "utf-8")

    def run(self, call: FunctionCall | CustomCall, *, resume: str | None = None,
            model: str = "gpt-rig") -> dict[str, Any]:
        """The scripted model asking for ``call`` (in the session ``resume`` names, else a
        new kept one); the tool output it got back, with the thread id as ``session``. A
        resumed session's history holds the earlier call's output: the script counts it."""
        with ResponsesServer([call, call] if resume else [call]) as server:
            done = self.project.run(server, "Do the task.", persist=True, resume=resume,
                                    model=model, env=self.hook_env)
            assert server.script.escapes() == [], "the CLI tried to reach beyond loopback"
            turns = server.script.turns()
        assert done.returncode == 0 and len(turns) == 2, (done.stdout, done.stderr)
        output = outputs(turns[-1].body)[-1]
        thread = next(e["thread_id"] for e in done.events if e["type"] == "thread.started")
        return {"output": str(output["output"]), "session": thread}

    def requests(self) -> list[dict[str, Any]]:
        listed = signoff("requests", "list", "--db", str(self.db), "--json", env=self.env)
        assert listed.returncode == 0, listed.stderr
        found: list[dict[str, Any]] = json.loads(listed.stdout)
        return found


@pytest.fixture(scope="module")
def codex() -> Path:
    return codex_bin()


def test_codex_gated_by_signoff_reads_denies_asks_and_runs_once(codex: Path,
                                                                tmp_path: Path) -> None:
    gated = Gated(tmp_path)
    (gated.ws / "notes.txt").write_text("remember the milk\n")
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")

    # An allowed read runs.
    read = gated.run(FunctionCall("exec_command", {"cmd": "cat notes.txt"}))
    assert "remember the milk" in read["output"], read

    # A denied command never runs: the ledger survives.
    denied = gated.run(FunctionCall("exec_command", {"cmd": "rm -f ledger"}))
    assert "blocked by PreToolUse hook" in denied["output"] and \
        "not allowed" in denied["output"], denied
    assert ledger.read_text() == "kept\n"

    # An ask nobody decides within the hook's wait is denied, naming its request.
    write = FunctionCall("exec_command", {"cmd": "echo hi > ledger"})
    waited = gated.run(write)
    (pending,) = [r for r in gated.requests() if r["status"] == "pending"]
    assert pending["id"] in waited["output"] and "blocked" in waited["output"], waited
    assert ledger.read_text() == "kept\n"
    assert pending["tool"] == "Bash" and pending["agent"] == "codex"

    # A human approves it; the same call, made again in that session, joins the request
    # and runs once.
    approved = signoff("requests", "approve", pending["id"], "--token-file",
                       str(gated.token), "--db", str(gated.db), "--policy",
                       str(gated.policy), env=gated.env)
    assert approved.returncode == 0, approved.stderr
    ran = gated.run(write, resume=waited["session"])
    assert "blocked" not in ran["output"] and "exited with code 0" in ran["output"], ran
    assert ran["session"] == waited["session"]
    assert ledger.read_text() == "hi\n"
    (done,) = [r for r in gated.requests() if r["id"] == pending["id"]]
    assert done["status"] == "succeeded"  # the PostToolUse hook reported the result

    # An edit through apply_patch (a model that has the tool) asks; its request holds
    # the patch, the diff the approver reads; nobody decides, nothing is written.
    edit = gated.run(CustomCall("apply_patch", PATCH), model="gpt-5.5")
    (asked,) = [r for r in gated.requests() if r["tool"] == "apply_patch"]
    assert asked["id"] in edit["output"] and not (gated.ws / "notes.md").exists()
    shown = signoff("requests", "show", asked["id"], "--db", str(gated.db), "--json",
                    env=gated.env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["args"] == {"command": PATCH}

    verified = signoff("audit", "verify", "--db", str(gated.db), "--json", env=gated.env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"], verified.stdout
    exported = signoff("audit", "export", "--db", str(gated.db), "--json", env=gated.env)
    created = [e for e in json.loads(exported.stdout) if e["kind"] == "request.created"]
    # The audit names the harness (the agent) and its session (the thread) of each ask.
    assert {(e["data"]["agent"], e["data"]["thread_id"]) for e in created} == {
        ("codex", waited["session"]), ("codex", edit["session"])}, json.dumps(created)


def test_a_hook_that_cannot_start_blocks_the_call(codex: Path, tmp_path: Path) -> None:
    """signoff missing from the hook's PATH: the shell exits 127, Codex would run the
    call; the installed command turns that into exit 2 with a reason, which blocks."""
    gated = Gated(tmp_path, command=str(tmp_path / "no-such-signoff"))
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")
    out = gated.run(FunctionCall("exec_command", {"cmd": "echo hi > ledger"}))
    assert "signoff hook codex failed" in out["output"], out
    assert ledger.read_text() == "kept\n"


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
def test_a_projects_hooks_gate_once_codex_trusts_the_project(codex: Path, tmp_path: Path,
                                                             trusted: bool) -> None:
    """``hook install codex --project`` writes .codex/hooks.json and its trust; Codex
    reads it in a project it trusts (the step the installer names) and, in one it does
    not, skips it without a word: the command runs ungated."""
    gated = Gated(tmp_path, scope=("--project", "--dir", str(tmp_path / "project")))
    assert (gated.ws / ".codex" / "hooks.json").exists()
    if trusted:
        with (gated.project.codex_home / "config.toml").open("a") as config:
            config.write(f'\n[projects.{json.dumps(str(gated.ws))}]\ntrust_level = "trusted"\n')
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")
    out = gated.run(FunctionCall("exec_command", {"cmd": "echo hi > ledger"}))
    assert ledger.read_text() == ("kept\n" if trusted else "hi\n"), out
    assert ("blocked by PreToolUse hook" in out["output"]) is trusted, out


def test_codex_with_the_resident_hook(codex: Path, tmp_path: Path) -> None:
    """The same with the hooks ``hook install codex --url`` writes (the standard-library
    client, trusted in config.toml) against a running ``signoff serve``: an allowed read
    runs, a denied command never does, an approved ask runs once, and the request names
    Codex, the agent's user and the session."""
    gated = Gated(tmp_path)
    (gated.ws / "notes.txt").write_text("remember the milk\n")
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")
    with resident_hooks("codex", db=gated.db, policy=gated.policy, cwd=tmp_path,
                        env=gated.env, settings=gated.project.codex_home / "hooks.json",
                        install=("--user",)) as url:
        read = gated.run(FunctionCall("exec_command", {"cmd": "cat notes.txt"}))
        assert "remember the milk" in read["output"], read
        denied = gated.run(FunctionCall("exec_command", {"cmd": "rm -f ledger"}))
        assert "blocked by PreToolUse hook" in denied["output"], denied
        assert ledger.read_text() == "kept\n"

        write = FunctionCall("exec_command", {"cmd": "echo hi > ledger"})
        waited = gated.run(write)
        (pending,) = [r for r in gated.requests() if r["status"] == "pending"]
        assert f"{url}/requests/{pending['id']}" in waited["output"], waited
        assert (pending["agent"], pending["principal"], pending["thread_id"]) == (
            "codex", "codex-bot", waited["session"])
        approved = signoff("requests", "approve", pending["id"], "--token-file",
                           str(gated.token), "--db", str(gated.db), "--policy",
                           str(gated.policy), env=gated.env)
        assert approved.returncode == 0, approved.stderr
        ran = gated.run(write, resume=waited["session"])
        assert "blocked" not in ran["output"], ran
        assert ledger.read_text() == "hi\n"
        (finished,) = [r for r in gated.requests() if r["id"] == pending["id"]]
        assert finished["status"] == "succeeded"  # the PostToolUse event reported it
