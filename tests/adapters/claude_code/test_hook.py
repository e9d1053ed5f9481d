"""``signoff.adapters.claude_code``: Claude Code's hook events answered by the gate,
in-process, on both backends — allow, deny, ask waited for, a timed-out ask named and
joined by its retry, fail-closed errors, PostToolUse results in the audit."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from signoff.adapters.claude_code import HookOptions, call_id_for, post_tool_use, pre_tool_use
from signoff.kernel.gate import Gate
from signoff.model import Decision, RequestStatus
from signoff.policy import Policy
from signoff.policy.starter import starter_toml
from signoff.store.base import Store


def pre(tool: str, args: dict[str, Any], *, session: str = "sess-1",
        use: str = "toolu_01", cwd: str = "/") -> str:
    """A PreToolUse event as Claude Code writes it to the hook's stdin."""
    return json.dumps({"session_id": session, "transcript_path": f"/tmp/{session}.jsonl",
                       "cwd": cwd, "permission_mode": "default",
                       "hook_event_name": "PreToolUse", "tool_name": tool,
                       "tool_input": args, "tool_use_id": use})


def post(tool: str, args: dict[str, Any], response: Any, *, session: str = "sess-1",
         use: str = "toolu_01") -> str:
    return json.dumps({"session_id": session, "transcript_path": f"/tmp/{session}.jsonl",
                       "cwd": "/", "permission_mode": "default",
                       "hook_event_name": "PostToolUse", "tool_name": tool,
                       "tool_input": args, "tool_response": response, "tool_use_id": use})


def answer(output: dict[str, Any]) -> tuple[str, str]:
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    return specific["permissionDecision"], specific["permissionDecisionReason"]


@pytest.fixture
def gate(store: Store, tmp_path: Path) -> Gate:
    root = tmp_path / "ws"
    root.mkdir()
    made = Gate(Policy.from_toml(starter_toml(str(root), "claude-code")), store,
                agent="claude-code")
    made.add_user("alice", roles=["ops"])
    return made


def approve(gate: Gate, request_id: str) -> None:
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(request_id, Decision.approve(), identity=alice)


def kinds(gate: Gate) -> list[str]:
    gate.flush()
    return [event.kind for event in gate.audit_events()]


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the hooks keep their claims (``claims``): this test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def options() -> HookOptions:
    return HookOptions(principal="os:dev", wait_seconds=0.3, inbox_url="http://127.0.0.1:8765")


def test_allowed_and_denied(gate: Gate, options: HookOptions) -> None:
    assert answer(pre_tool_use(gate, pre("Bash", {"command": "ls -la"}), options))[0] == "allow"
    kind, reason = answer(pre_tool_use(gate, pre("Bash", {"command": "rm -rf src"}), options))
    assert kind == "deny"
    assert "deleting files from the shell is not allowed" in reason
    gate.flush()  # allowed / denied verdicts are batched; the hook's process closes the gate
    events = [e for e in gate.audit_events() if e.kind in ("call.allowed", "call.denied")]
    assert [e.kind for e in events] == ["call.allowed", "call.denied"]
    assert json.loads(events[0].data)["thread_id"] == "sess-1"
    assert events[0].actor == "os:dev"


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]",
                                   json.dumps({"hook_event_name": "PostToolUse"}).encode(),
                                   json.dumps({"hook_event_name": "PreToolUse",
                                               "session_id": "s", "tool_name": "Bash",
                                               "tool_input": "ls"}).encode(),
                                   json.dumps({"hook_event_name": "PreToolUse",
                                               "tool_name": "Bash",
                                               "tool_input": {"command": "ls"}}).encode()])
def test_bad_input_denies(gate: Gate, stdin: bytes, options: HookOptions) -> None:
    kind, reason = answer(pre_tool_use(gate, stdin, options))
    assert kind == "deny"
    assert "could not read the hook input" in reason


class Broken:
    """A gate whose store is down."""

    def propose(self, *_: Any, **__: Any) -> Any:
        raise ConnectionError("the database is down")


def test_an_outage_denies(options: HookOptions) -> None:
    kind, reason = answer(pre_tool_use(Broken(), pre("Bash", {"command": "ls"}),  # type: ignore[arg-type]
                                       options))
    assert kind == "deny"
    assert "the database is down" in reason


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
    output = pre_tool_use(gate, pre("Bash", args), HookOptions(principal="os:dev",
                                                               wait_seconds=20))
    worker.join()
    kind, reason = answer(output)
    assert (kind, seen[0] in reason) == ("allow", True)
    assert gate.get_request(seen[0]).status is RequestStatus.EXECUTING
    # Claude Code ran it; PostToolUse settles the request with the result
    reported = post_tool_use(gate, post("Bash", args, {"stdout": "ok", "stderr": "",
                                                        "interrupted": False}), options)
    assert reported == seen[0]
    assert gate.get_request(seen[0]).status is RequestStatus.SUCCEEDED
    assert "request.succeeded" in kinds(gate)
    assert gate.verify_audit().ok


def test_timeout_names_the_request_and_the_retry_joins_it(gate: Gate, options: HookOptions) -> None:
    args = {"file_path": "/nowhere/b.py", "content": "x = 2\n"}
    kind, reason = answer(pre_tool_use(gate, pre("Write", args, use="toolu_A"), options))
    assert kind == "deny"
    [request] = gate.pending_on_thread("sess-1")
    assert f"http://127.0.0.1:8765/requests/{request.id}" in reason
    assert request.call_id == call_id_for("sess-1", "Write", args)
    # the same call again, with Claude Code's new tool_use_id: the same request
    kind, reason = answer(pre_tool_use(gate, pre("Write", args, use="toolu_B"), options))
    assert kind == "deny" and request.id in reason
    assert [r.id for r in gate.thread_requests("sess-1")] == [request.id]
    approve(gate, request.id)
    kind, reason = answer(pre_tool_use(gate, pre("Write", args, use="toolu_C"), options))
    assert kind == "allow" and request.id in reason
    # the same call in another session is another request
    assert answer(pre_tool_use(gate, pre("Write", args, session="sess-2"), options))[0] \
        == "deny"
    assert len(gate.thread_requests("sess-2")) == 1
    # one approval, one run: the call made again asks afresh
    post_tool_use(gate, post("Write", args, {"type": "create"}, use="toolu_C"), options)
    kind, reason = answer(pre_tool_use(gate, pre("Write", args, use="toolu_D"), options))
    assert kind == "deny"
    again = [r for r in gate.thread_requests("sess-1") if r.id != request.id]
    assert len(again) == 1 and again[0].id in reason
    assert again[0].status is RequestStatus.PENDING


def test_a_rejection_reaches_the_model(gate: Gate, options: HookOptions) -> None:
    args = {"command": "make deploy"}
    answer(pre_tool_use(gate, pre("Bash", args), options))
    [request] = gate.pending_on_thread("sess-1")
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(request.id, Decision.reject("not on a Sunday"), identity=alice)
    kind, reason = answer(pre_tool_use(gate, pre("Bash", args, use="toolu_2"), options))
    assert kind == "deny" and "not on a Sunday" in reason


def test_ask_locally_hands_the_ask_to_claude_code(gate: Gate, options: HookOptions) -> None:
    local = HookOptions(principal="os:dev", ask_locally=True)
    kind, _ = answer(pre_tool_use(gate, pre("Bash", {"command": "make"}), local))
    assert kind == "ask"
    [request] = gate.thread_requests("sess-1")
    assert request.status is RequestStatus.CANCELLED


def test_the_result_of_an_allowed_call_is_audited(gate: Gate, options: HookOptions) -> None:
    args = {"file_path": "/tmp/x.txt"}
    pre_tool_use(gate, pre("Read", args, use="toolu_R"), options)
    assert post_tool_use(gate, post("Read", args, {"content": "hello"}, use="toolu_R"),
                         options) is None
    gate.flush()
    results = [json.loads(e.data) for e in gate.audit_events() if e.kind == "call.result"]
    assert len(results) == 1
    assert results[0]["tool_use_id"] == "toolu_R"
    assert results[0]["agent"] == "claude-code" and results[0]["outcome"] == "ok"
    assert results[0]["result_hash"].startswith("sha256:")
    assert gate.verify_audit().ok


def test_a_failure_settles_the_claimed_request_as_failed(gate: Gate,
                                                         options: HookOptions) -> None:
    args = {"command": "make test"}
    answer(pre_tool_use(gate, pre("Bash", args), options))
    [request] = gate.pending_on_thread("sess-1")
    approve(gate, request.id)
    assert answer(pre_tool_use(gate, pre("Bash", args, use="toolu_2"), options))[0] == "allow"
    failure = json.loads(post("Bash", args, None, use="toolu_2"))
    failure["hook_event_name"] = "PostToolUseFailure"
    failure["error"] = "exit status 2"
    assert post_tool_use(gate, json.dumps(failure), options) == request.id
    assert gate.get_request(request.id).status is RequestStatus.FAILED
    # the claim was taken: a second report of the same call finds none
    assert post_tool_use(gate, post("Bash", args, {"stdout": ""}, use="toolu_2"),
                         options) is None


@pytest.mark.parametrize("session", ["abc\x00d", "abc\n", "a" * 8192])
def test_a_session_id_the_store_would_refuse_denies(gate: Gate, session: str,
                                                    options: HookOptions) -> None:
    """A session id with a NUL, a trailing newline or 8 KB never reaches the store as a
    thread: the call is denied, and nothing is written for it."""
    stdin = json.dumps({"hook_event_name": "PreToolUse", "session_id": session,
                        "tool_name": "Bash", "tool_input": {"command": "ls"},
                        "tool_use_id": "t1", "cwd": "/tmp"}).encode()
    gate.flush()
    list(gate.audit_events())  # sealed (PostgreSQL seals after commit): the head stands
    before = gate.audit_head()[0]
    kind, reason = answer(pre_tool_use(gate, stdin, options))
    assert kind == "deny" and "could not judge this call" in reason
    assert gate.list_requests() == []
    gate.flush()
    assert gate.audit_head()[0] == before


def test_a_64_mb_input_denies(gate: Gate, options: HookOptions) -> None:
    stdin = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s",
                        "tool_name": "Write", "tool_input": {
                            "file_path": "/tmp/x", "content": "a" * (64 << 20)},
                        "tool_use_id": "t1", "cwd": "/tmp"}).encode()
    kind, _ = answer(pre_tool_use(gate, stdin, options))
    assert kind == "deny"
    assert gate.list_requests() == []


def test_an_approvers_edit_runs_as_approved_through_updated_input(
        gate: Gate, options: HookOptions) -> None:
    proposed = {"command": "echo hi > ledger", "description": "Write it"}
    edited = {"command": "echo edited > ledger", "description": "Write it"}
    assert answer(pre_tool_use(gate, pre("Bash", proposed, use="t1"), options))[0] == "deny"
    [request] = gate.pending_on_thread("sess-1")
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(request.id, Decision.edit(edited), identity=alice)
    output = pre_tool_use(gate, pre("Bash", proposed, use="t2"), options)
    kind, reason = answer(output)
    assert kind == "allow" and request.id in reason and "edit" in reason
    # Claude Code runs updatedInput: exactly the approved arguments.
    assert output["hookSpecificOutput"]["updatedInput"] == edited
    assert gate.get_request(request.id).status is RequestStatus.EXECUTING
    # It reports the call with the input it ran: the claim is found under it.
    post_tool_use(gate, post("Bash", edited, {"stdout": ""}, use="t2"), options)
    assert gate.get_request(request.id).status is RequestStatus.SUCCEEDED
    # A plain approval carries no updatedInput: the model's own input runs.
    plain = {"command": "echo plain > ledger", "description": "Write it"}
    pre_tool_use(gate, pre("Bash", plain, use="t3"), options)
    [other] = gate.pending_on_thread("sess-1")
    approve(gate, other.id)
    output = pre_tool_use(gate, pre("Bash", plain, use="t4"), options)
    assert answer(output)[0] == "allow" and "updatedInput" not in output["hookSpecificOutput"]


def test_an_edited_approval_runs_in_its_own_session_only(gate: Gate,
                                                         options: HookOptions) -> None:
    """Another route to an approval: the same proposal from another session. The edited
    approval of sess-1 neither runs there nor lends its updatedInput to sess-2."""
    proposed = {"command": "echo hi > ledger", "description": "Write it"}
    edited = {"command": "echo edited > ledger", "description": "Write it"}
    pre_tool_use(gate, pre("Bash", proposed, use="t1"), options)
    [request] = gate.pending_on_thread("sess-1")
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(request.id, Decision.edit(edited), identity=alice)
    other = pre_tool_use(gate, pre("Bash", proposed, session="sess-2", use="t2"), options)
    kind, reason = answer(other)
    assert kind == "deny" and request.id not in reason
    assert "updatedInput" not in other["hookSpecificOutput"]
    assert gate.get_request(request.id).status is RequestStatus.APPROVED  # still unclaimed
    # Nor does proposing the edited arguments themselves in sess-1 ride on it: they are
    # another call, asked afresh.
    mine = pre_tool_use(gate, pre("Bash", edited, use="t3"), options)
    assert answer(mine)[0] == "deny" and "updatedInput" not in mine["hookSpecificOutput"]
    assert gate.get_request(request.id).status is RequestStatus.APPROVED
