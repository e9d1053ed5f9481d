"""The Claude Agent SDK (the real Python package) driving the pinned Claude Code CLI against
the scripted Messages API, gated by signoff through its Python API: ``signoff_hooks`` with
``query()``, ``signoff_can_use_tool`` with ``ClaudeSDKClient``, on a ``Gate`` over the
SQLite database of ``signoff init --preset claude-code``. An allowed read runs; a denied
command never runs (the ledger survives); an ask waits while a human approves it with
``signoff requests approve``, and runs once; an ask nobody decides in time is denied with
its request named, and the retry after approval runs; an Edit's diff is in the request,
and an approver's edit runs as approved through ``can_use_tool`` (the hooks refuse it);
the audit verifies and names the agent and the session."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    CanUseToolShadowedWarning,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    query,
)

from signoff.adapters.claude_agent import AGENT, signoff_can_use_tool, signoff_hooks
from signoff.kernel.gate import Gate
from signoff.policy import Policy
from signoff.store.sqlite import SqliteStore

sys.path.insert(0, str(Path(__file__).parents[1] / "claude_code"))
from claude_rig import Project, claude_bin, quiet_env
from messages_api import MessagesServer, ToolCall, tool_results

pytestmark = pytest.mark.slow

SIGNOFF = [sys.executable, "-m", "signoff.cli"]
MODES = ("hooks", "can_use_tool")


def signoff(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SIGNOFF, *argv], capture_output=True, text=True, timeout=120,
                          check=False, env=env)


class Gated:
    """A project whose SDK agent is gated by signoff (``mode``: its hooks, or its
    ``can_use_tool`` with the hooks that send every call to it), on a database set up
    with the CLI as a user would."""

    def __init__(self, root: Path, mode: str) -> None:
        self.project = Project(root)
        self.ws, self.mode = self.project.dir, mode
        self.policy = root / "signoff.toml"
        self.db = root / "signoff.db"
        self.env = {**os.environ, "XDG_STATE_HOME": str(root / "state"),
                    "HOME": str(self.project.home)}
        for argv in (("init", str(self.policy), "--root", str(self.ws), "--preset",
                      "claude-code"),
                     ("db", "migrate", "--db", str(self.db))):
            done = signoff(*argv, env=self.env)
            assert done.returncode == 0, (argv, done.stderr)
        added = signoff("users", "add", "alice", "--roles", "ops", "--db", str(self.db),
                        "--json", env=self.env)
        assert added.returncode == 0, added.stderr
        self.token = root / "alice.token"
        self.token.write_text(json.loads(added.stdout)["token"], "utf-8")
        self.gate = Gate(Policy.load(self.policy), SqliteStore(self.db, create=False))
        self.claims = root / "state" / "claims"

    def options(self, server: MessagesServer, wait: float, resume: str | None,
                **more: Any) -> ClaudeAgentOptions:
        gating: dict[str, Any]
        if self.mode == "hooks":
            gating = {"hooks": signoff_hooks(self.gate, wait_seconds=wait,
                                             claims_dir=self.claims)}
        else:
            permit = signoff_can_use_tool(self.gate, wait_seconds=wait, claims_dir=self.claims)
            gating = {"can_use_tool": permit, "hooks": permit.hooks}
        return ClaudeAgentOptions(
            cli_path=str(claude_bin()), cwd=str(self.ws), resume=resume, max_turns=4,
            env={"HOME": str(self.project.home), "IS_SANDBOX": "1", **quiet_env(server.url)},
            **gating, **more)

    def run(self, *calls: ToolCall, wait: float = 3, resume: str | None = None,
            earlier: tuple[ToolCall, ...] = (), **more: Any) -> dict[str, Any]:
        """The scripted model asking for ``calls`` in turn (in the session ``resume``
        names, whose history holds the results of the ``earlier`` calls; else in a new
        one), through ``query()`` (hooks) or ``ClaudeSDKClient`` (can_use_tool); the last
        tool result the model got, with the session id as ``session``. ``more``: more
        ``ClaudeAgentOptions``."""
        with MessagesServer([*earlier, *calls]) as server:
            options = self.options(server, wait, resume, **more)
            result = asyncio.run(self._hooked(options) if self.mode == "hooks"
                                 else self._permitted(options))
            assert server.script.escapes() == [], "the CLI tried to reach beyond loopback"
            turns = server.script.turns()
        assert not result.is_error and len(turns) == len(calls) + 1, result
        return {**tool_results(turns[-1].body)[-1], "session": result.session_id}

    @staticmethod
    async def _hooked(options: ClaudeAgentOptions) -> ResultMessage:
        results = [m async for m in query(prompt="Do the task.", options=options)
                   if isinstance(m, ResultMessage)]
        return results[-1]

    @staticmethod
    async def _permitted(options: ClaudeAgentOptions) -> ResultMessage:
        async with ClaudeSDKClient(options) as client:
            await client.query("Do the task.")
            results = [m async for m in client.receive_response()
                       if isinstance(m, ResultMessage)]
        return results[-1]

    def requests(self) -> list[dict[str, Any]]:
        listed = signoff("requests", "list", "--db", str(self.db), "--json", env=self.env)
        assert listed.returncode == 0, listed.stderr
        found: list[dict[str, Any]] = json.loads(listed.stdout)
        return found

    def decide(self, verb: str, request_id: str, *more: str) -> None:
        done = signoff("requests", verb, request_id, *more, "--token-file", str(self.token),
                       "--db", str(self.db), "--policy", str(self.policy), env=self.env)
        assert done.returncode == 0, done.stderr

    def approve_when_asked(self, seen: list[str]) -> threading.Thread:
        """A human watching ``signoff requests list`` who approves the next new ask."""
        asked = {r["id"] for r in self.requests()}

        def human() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                pending = [r for r in self.requests()
                           if r["status"] == "pending" and r["id"] not in asked]
                if pending:
                    seen.append(pending[0]["id"])
                    self.decide("approve", pending[0]["id"])
                    return
                time.sleep(0.2)

        worker = threading.Thread(target=human)
        worker.start()
        return worker


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_bin()


@pytest.fixture(params=MODES)
def gated(request: pytest.FixtureRequest, claude: Path, tmp_path: Path) -> Iterator[Gated]:
    made = Gated(tmp_path, request.param)
    yield made
    made.gate.close()


def text_of(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content)
    return str(content)


def test_the_sdk_gated_by_signoff_reads_denies_asks_and_runs_once(gated: Gated) -> None:
    (gated.ws / "notes.txt").write_text("remember the milk\n")
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")

    # An allowed read runs.
    read = gated.run(ToolCall("Read", {"file_path": str(gated.ws / "notes.txt")}))
    assert "remember the milk" in text_of(read) and not read.get("is_error")

    # A read the CLI's own rules allow without asking is judged all the same: a .env in
    # the workspace is asked, and nobody decides within the wait.
    (gated.ws / ".env").write_text("API_KEY=sk-live-123\n")
    secret = gated.run(ToolCall("Read", {"file_path": str(gated.ws / ".env")}))
    assert secret.get("is_error") and "sk-live-123" not in text_of(secret)

    # A denied command never runs: the ledger survives.
    denied = gated.run(ToolCall("Bash", {"command": "rm -f ledger",
                                         "description": "Remove the ledger"}))
    assert denied.get("is_error") and "not allowed" in text_of(denied)
    assert ledger.read_text() == "kept\n"

    # An ask waits while a human approves it with the CLI; the call runs once.
    seen: list[str] = []
    human = gated.approve_when_asked(seen)
    appended = gated.run(ToolCall("Bash", {"command": "echo once >> ledger",
                                           "description": "Append"}), wait=60)
    human.join()
    assert not appended.get("is_error"), text_of(appended)
    assert ledger.read_text() == "kept\nonce\n"
    (done,) = [r for r in gated.requests() if r["id"] == seen[0]]
    assert done["status"] == "succeeded"  # PostToolUse reported the result

    # An ask nobody decides within the wait is denied, naming its request.
    write = ToolCall("Bash", {"command": "echo hi > ledger", "description": "Write it"})
    waited = gated.run(write)
    (pending,) = [r for r in gated.requests() if r["status"] == "pending"
                  and r["tool"] == "Bash"]
    assert waited.get("is_error") and pending["id"] in text_of(waited)
    assert ledger.read_text() == "kept\nonce\n"
    assert (pending["tool"], pending["agent"]) == ("Bash", AGENT)
    assert pending["thread_id"] == waited["session"]  # the SDK's session

    # A human approves it; the same call, retried in that session, joins it and runs.
    gated.decide("approve", pending["id"])
    ran = gated.run(write, resume=str(waited["session"]), earlier=(write,))
    assert not ran.get("is_error"), text_of(ran)
    assert ledger.read_text() == "hi\n"
    (settled,) = [r for r in gated.requests() if r["id"] == pending["id"]]
    assert settled["status"] == "succeeded"

    gated.gate.flush()
    verified = signoff("audit", "verify", "--db", str(gated.db), "--json", env=gated.env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"], verified.stdout
    exported = signoff("audit", "export", "--db", str(gated.db), "--json", env=gated.env)
    events = json.loads(exported.stdout)
    created = [e for e in events if e["kind"] == "request.created"]
    # The audit names the harness (the agent) and its session (the thread) of each ask.
    assert {e["data"]["agent"] for e in created} == {AGENT}, json.dumps(created)
    assert {e["data"]["thread_id"] for e in created} == {
        secret["session"], appended["session"], waited["session"]}
    # The read was judged (allowed) and its result reported; the rm was judged (denied).
    judged = {(e["kind"], e["data"]["tool"], e["data"]["thread_id"]) for e in events
              if e["kind"] in ("call.allowed", "call.denied", "call.result")}
    assert {("call.allowed", "Read", read["session"]), ("call.result", "Read", read["session"]),
            ("call.denied", "Bash", denied["session"])} <= judged, judged


def test_an_edits_diff_is_asked_and_an_approvers_edit_runs_only_as_approved(
        gated: Gated) -> None:
    target = gated.ws / "app.py"
    target.write_text("DEBUG = True\nPORT = 80\n")
    # Claude Code edits only a file read in the session.
    read = ToolCall("Read", {"file_path": str(target)})
    edit = ToolCall("Edit", {"file_path": str(target), "old_string": "PORT = 80",
                             "new_string": "PORT = 8080"})
    waited = gated.run(read, edit)
    (pending,) = [r for r in gated.requests() if r["status"] == "pending"]
    assert waited.get("is_error") and pending["id"] in text_of(waited)
    # The request holds the diff: the file, the text replaced and its replacement.
    shown = signoff("requests", "show", pending["id"], "--db", str(gated.db), "--json",
                    env=gated.env)
    args = json.loads(shown.stdout)["args"]
    args = json.loads(args) if isinstance(args, str) else args
    assert (args["file_path"], args["old_string"], args["new_string"]) == (
        str(target), "PORT = 80", "PORT = 8080")
    assert target.read_text() == "DEBUG = True\nPORT = 80\n"

    # The approver changes the port before approving.
    approved = {**args, "new_string": "PORT = 8443"}
    gated.decide("edit", pending["id"], "--args", json.dumps(approved))
    again = gated.run(read, edit, resume=str(waited["session"]), earlier=(read, edit))
    (settled,) = [r for r in gated.requests() if r["id"] == pending["id"]]
    # The approved arguments ran, and only they (can_use_tool's updated_input, the hook's
    # updatedInput).
    assert not again.get("is_error"), text_of(again)
    assert target.read_text() == "DEBUG = True\nPORT = 8443\n"
    assert settled["status"] == "succeeded"


def test_the_clis_own_allowances_do_not_pass_signoff_by(gated: Gated) -> None:
    """Bypassing the CLI's permissions and allowing Bash outright in its rules changes
    nothing: signoff still judges the call, and the rm is denied. (The SDK warns that
    can_use_tool will not be asked: its PreToolUse hook's "ask" has it asked all the same.)"""
    ledger = gated.ws / "ledger"
    ledger.write_text("kept\n")
    warned = pytest.warns(CanUseToolShadowedWarning) if gated.mode == "can_use_tool" \
        else contextlib.nullcontext()
    with warned:
        denied = gated.run(ToolCall("Bash", {"command": "rm -f ledger",
                                             "description": "Remove"}),
                           permission_mode="bypassPermissions", allowed_tools=["Bash", "Read"])
    assert denied.get("is_error") and "not allowed" in text_of(denied)
    assert ledger.read_text() == "kept\n"
