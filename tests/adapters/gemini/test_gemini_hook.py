"""``signoff.adapters.gemini``: Gemini CLI's hook events answered by the gate,
in-process, on both backends — allow, deny, ask waited for, a timed-out ask named and
joined by its retry, an edit's old and new text in its request, fail-closed errors,
AfterTool results in the audit."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from signoff.adapters.gemini import AGENT, Gemini, after_tool, before_tool
from signoff.adapters.hooks import HookOptions, call_id_for
from signoff.kernel.gate import Gate
from signoff.model import Decision, RequestStatus
from signoff.policy import Policy
from signoff.policy.starter import starter_toml
from signoff.store.base import Store

DATA = Path(__file__).parent / "data"


def before(tool: str, args: dict[str, Any], *, session: str = "sess-1") -> str:
    """A BeforeTool event as Gemini CLI writes it to the hook's stdin (data/beforetool.json)."""
    recorded = json.loads((DATA / "beforetool.json").read_text("utf-8"))
    return json.dumps({**recorded, "session_id": session, "tool_name": tool,
                       "tool_input": args})


def after(tool: str, args: dict[str, Any], response: Any, *, session: str = "sess-1") -> str:
    recorded = json.loads((DATA / "aftertool.json").read_text("utf-8"))
    return json.dumps({**recorded, "session_id": session, "tool_name": tool,
                       "tool_input": args, "tool_response": response})


def answer(output: dict[str, Any]) -> tuple[str, str]:
    assert "hookSpecificOutput" not in output  # never a rewrite of the call's arguments
    return output["decision"], output["reason"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    made = tmp_path / "ws"
    made.mkdir()
    return made


@pytest.fixture
def gate(store: Store, root: Path) -> Gate:
    made = Gate(Policy.from_toml(starter_toml(str(root), "gemini")), store, agent=AGENT)
    made.add_user("alice", roles=["ops"])
    return made


def approve(gate: Gate, request_id: str) -> None:
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(request_id, Decision.approve(), identity=alice)


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the hooks keep their claims (``claims``): this test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def options() -> HookOptions:
    return HookOptions(agent=AGENT, principal="os:dev", wait_seconds=0.3,
                       inbox_url="http://127.0.0.1:8765")


def test_the_recorded_events_are_read(gate: Gate, options: HookOptions) -> None:
    """The exact stdin the pinned CLI sent (data/) is judged as what it holds."""
    recorded = (DATA / "beforetool.json").read_text("utf-8")
    kind, reason = answer(before_tool(gate, recorded, options))
    assert kind == "deny" and "human's approval" in reason  # `echo hi > ledger` writes
    [request] = gate.pending_on_thread(json.loads(recorded)["session_id"])
    assert (request.tool, json.loads(request.args)) == ("run_shell_command",
                                                        {"command": "echo hi > ledger"})


def test_allowed_and_denied(gate: Gate, options: HookOptions) -> None:
    assert answer(before_tool(gate, before("run_shell_command", {"command": "ls -la"}),
                              options))[0] == "allow"
    kind, reason = answer(before_tool(gate, before("run_shell_command",
                                                   {"command": "rm -rf src"}), options))
    assert kind == "deny" and "deleting files from the shell is not allowed" in reason
    gate.flush()
    events = [e for e in gate.audit_events() if e.kind in ("call.allowed", "call.denied")]
    assert [e.kind for e in events] == ["call.allowed", "call.denied"]
    data = json.loads(events[0].data)
    assert data["thread_id"] == "sess-1" and events[0].actor == "os:dev"


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]",
                                   json.dumps({"hook_event_name": "AfterTool"}).encode(),
                                   json.dumps({"hook_event_name": "PreToolUse",
                                               "session_id": "s", "tool_name": "x",
                                               "tool_input": {}}).encode(),
                                   json.dumps({"hook_event_name": "BeforeTool",
                                               "session_id": "s", "tool_name": "glob",
                                               "tool_input": "*"}).encode(),
                                   json.dumps({"hook_event_name": "BeforeTool",
                                               "tool_name": "glob",
                                               "tool_input": {"pattern": "*"}}).encode()])
def test_bad_input_denies(gate: Gate, stdin: bytes, options: HookOptions) -> None:
    kind, reason = answer(before_tool(gate, stdin, options))
    assert kind == "deny" and "could not read the hook input" in reason


class Broken:
    """A gate whose store is down."""

    def propose(self, *_: Any, **__: Any) -> Any:
        raise ConnectionError("the database is down")


def test_an_outage_denies(options: HookOptions) -> None:
    stdin = before("read_file", {"file_path": "a.py"})
    kind, reason = answer(before_tool(Broken(), stdin, options))  # type: ignore[arg-type]
    assert kind == "deny" and "the database is down" in reason


def test_the_harness_replies_and_refuses_in_gemini_terms(gate: Gate,
                                                        options: HookOptions) -> None:
    reply = Gemini().pre(gate, before("glob", {"pattern": "*.py"}).encode(), options)
    assert (json.loads(reply.stdout)["decision"], reply.exit_code) == ("allow", 0)
    refused = Gemini().refuse("signoff is not reachable")
    # exit 2 blocks even where the JSON on stdout were lost; stderr is then the reason
    assert refused.exit_code == 2 and refused.stderr == "signoff is not reachable"
    assert json.loads(refused.stdout) == {"decision": "deny",
                                          "reason": "signoff is not reachable"}


def test_ask_approved_while_the_hook_waits(gate: Gate, options: HookOptions) -> None:
    args = {"command": "make build"}
    seen: list[str] = []

    def approver() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pending = gate.pending_on_thread("sess-1")
            if pending:
                seen.append(pending[0].id)
                approve(gate, pending[0].id)
                return
            time.sleep(0.05)

    worker = threading.Thread(target=approver)
    worker.start()
    output = before_tool(gate, before("run_shell_command", args),
                         HookOptions(agent=AGENT, principal="os:dev", wait_seconds=20))
    worker.join()
    kind, reason = answer(output)
    assert (kind, seen[0] in reason) == ("allow", True)
    assert gate.get_request(seen[0]).status is RequestStatus.EXECUTING
    assert gate.get_request(seen[0]).agent == AGENT
    # Gemini CLI ran it; AfterTool settles the request with the result
    reported = after_tool(gate, after("run_shell_command", args, {
        "llmContent": "Output: built", "returnDisplay": "built"}), options)
    assert reported == seen[0]
    assert gate.get_request(seen[0]).status is RequestStatus.SUCCEEDED
    assert gate.verify_audit().ok


def test_timeout_names_the_request_and_the_retry_joins_it(
        gate: Gate, root: Path, options: HookOptions) -> None:
    args = {"file_path": str(root / "b.py"), "content": "x = 2\n"}
    kind, reason = answer(before_tool(gate, before("write_file", args), options))
    assert kind == "deny"
    [request] = gate.pending_on_thread("sess-1")
    assert f"http://127.0.0.1:8765/requests/{request.id}" in reason
    assert request.call_id == call_id_for("sess-1", "write_file", args, agent=AGENT)
    assert request.call_id.startswith("gemini-cli-")
    kind, reason = answer(before_tool(gate, before("write_file", args), options))
    assert kind == "deny" and request.id in reason
    assert [r.id for r in gate.thread_requests("sess-1")] == [request.id]
    approve(gate, request.id)
    kind, reason = answer(before_tool(gate, before("write_file", args), options))
    assert kind == "allow" and request.id in reason
    # one approval, one run: the call made again asks afresh
    after_tool(gate, after("write_file", args, {"llmContent": "ok"}), options)
    kind, reason = answer(before_tool(gate, before("write_file", args), options))
    again = [r for r in gate.thread_requests("sess-1") if r.id != request.id]
    assert kind == "deny" and len(again) == 1 and again[0].id in reason


def test_a_replace_request_holds_the_edit(gate: Gate, root: Path,
                                          options: HookOptions) -> None:
    (root / "a.py").write_text("x = 1\n", "utf-8")
    args = {"file_path": str(root / "a.py"), "old_string": "x = 1", "new_string": "x = 2",
            "instruction": "bump x"}
    answer(before_tool(gate, before("replace", args), options))
    [request] = gate.pending_on_thread("sess-1")
    assert json.loads(request.args) == args and request.tool == "replace"
    [change] = request.changes  # what approvers read: the diff the edit makes
    assert "-x = 1" in change["diff"] and "+x = 2" in change["diff"]


def test_a_rejection_reaches_the_model(gate: Gate, options: HookOptions) -> None:
    args = {"command": "make deploy"}
    answer(before_tool(gate, before("run_shell_command", args), options))
    [request] = gate.pending_on_thread("sess-1")
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(request.id, Decision.reject("not on a Sunday"), identity=alice)
    kind, reason = answer(before_tool(gate, before("run_shell_command", args), options))
    assert kind == "deny" and "not on a Sunday" in reason


def test_ask_locally_hands_the_ask_to_gemini_cli(gate: Gate) -> None:
    local = HookOptions(agent=AGENT, principal="os:dev", ask_locally=True)
    output = before_tool(gate, before("run_shell_command", {"command": "make"}), local)
    assert answer(output)[0] == "ask" and output["systemMessage"].startswith("signoff asks")
    [request] = gate.thread_requests("sess-1")
    assert request.status is RequestStatus.CANCELLED


def test_the_result_of_an_allowed_call_is_audited(gate: Gate, root: Path,
                                                  options: HookOptions) -> None:
    args = {"file_path": str(root / "x.txt")}
    before_tool(gate, before("read_file", args), options)
    assert after_tool(gate, after("read_file", args, {"llmContent": "hello"}), options) \
        is None
    gate.flush()
    results = [json.loads(e.data) for e in gate.audit_events() if e.kind == "call.result"]
    assert len(results) == 1
    assert (results[0]["agent"], results[0]["outcome"], results[0]["thread_id"]) == \
        (AGENT, "ok", "sess-1")


def test_a_failure_settles_the_claimed_request_as_failed(gate: Gate,
                                                         options: HookOptions) -> None:
    args = {"command": "make test"}
    answer(before_tool(gate, before("run_shell_command", args), options))
    [request] = gate.pending_on_thread("sess-1")
    approve(gate, request.id)
    assert answer(before_tool(gate, before("run_shell_command", args), options))[0] == "allow"
    failed = {"llmContent": "", "returnDisplay": "", "error": {
        "message": "exit status 2", "type": "shell_execute_error"}}
    assert after_tool(gate, after("run_shell_command", args, failed), options) == request.id
    assert gate.get_request(request.id).status is RequestStatus.FAILED
    with pytest.raises(ValueError, match="expected a AfterTool event"):
        after_tool(gate, before("run_shell_command", args), options)
