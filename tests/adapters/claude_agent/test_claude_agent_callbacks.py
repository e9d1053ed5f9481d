"""``signoff.adapters.claude_agent``: the SDK's callbacks answered by an in-process gate, as
the SDK calls them (hook inputs as the CLI sends them, ``ToolPermissionContext``), without
the CLI — allow, deny, an ask waited for off the event loop, a timed-out ask named and
joined, an approver's edit (denied by the hooks, run by ``can_use_tool``), the result
reported, cancellation, and every failure a deny."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from signoff.adapters import claude_agent
from signoff.adapters.claude_agent import AGENT, signoff_can_use_tool, signoff_hooks
from signoff.decisions import Decision
from signoff.kernel.gate import Gate
from signoff.model import RequestStatus
from signoff.policy import Policy
from signoff.policy.starter import starter_toml
from signoff.store.base import Store

SESSION = "5aade7b7-afd7-4959-8f6e-20df4802c188"


def event(name: str, tool: str, args: dict[str, Any], use: str, **more: Any) -> Any:
    """A hook input as the CLI sends it to the SDK's callback."""
    return {"session_id": SESSION, "transcript_path": f"/tmp/{SESSION}.jsonl", "cwd": "/",
            "permission_mode": "default", "hook_event_name": name, "tool_name": tool,
            "tool_input": args, "tool_use_id": use, **more}


def context(use: str) -> ToolPermissionContext:
    return ToolPermissionContext(tool_use_id=use, decision_reason="signoff judges this call")


async def hook(matchers: list[HookMatcher], data: Any) -> dict[str, Any]:
    (matcher,) = matchers
    assert matcher.matcher == "*"
    (callback,) = matcher.hooks
    return dict(await callback(data, data.get("tool_use_id"), {"signal": None}))


def decision(output: dict[str, Any]) -> tuple[str, str]:
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    return specific["permissionDecision"], specific["permissionDecisionReason"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def gate(store: Store, workspace: Path) -> Gate:
    # Built with the Gate's default agent name: the adapter names it for the audit.
    made = Gate(Policy.from_toml(starter_toml(str(workspace), "claude-code")), store)
    made.add_user("alice", roles=["ops"])
    return made


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where claims wait for the post-call hook: this test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def approve(gate: Gate, request_id: str, edit: dict[str, Any] | None = None) -> None:
    alice = gate.authenticate(gate.rotate_token("alice")[1])
    gate.decide(request_id, Decision.edit(edit) if edit else Decision.approve(),
                identity=alice)


def approve_when_asked(gate: Gate, seen: list[str]) -> threading.Thread:
    def approver() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pending = gate.pending_on_thread(SESSION)
            if pending:
                time.sleep(0.3)  # a human takes a moment: the loop must go on meanwhile
                seen.append(pending[0].id)
                approve(gate, pending[0].id)
                return
            time.sleep(0.05)

    worker = threading.Thread(target=approver)
    worker.start()
    return worker


def test_hooks_allow_deny_and_name_the_agent_and_session(gate: Gate) -> None:
    hooks = signoff_hooks(gate, principal="app:ci", wait_seconds=0.3)
    assert set(hooks) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    assert hooks["PreToolUse"][0].timeout == pytest.approx(15.3)

    async def scenario() -> list[tuple[str, str]]:
        return [decision(await hook(hooks["PreToolUse"], event("PreToolUse", tool, args, use)))
                for tool, args, use in (("Bash", {"command": "ls -la"}, "t1"),
                                        ("Bash", {"command": "rm -rf src"}, "t2"),
                                        ("Bash", {"command": "make deploy"}, "t3"))]

    (allowed, _), (denied, why), (asked, waiting) = asyncio.run(scenario())
    assert (allowed, denied, asked) == ("allow", "deny", "deny")
    assert "deleting files from the shell is not allowed" in why
    (request,) = gate.pending_on_thread(SESSION)
    assert request.id in waiting and f"signoff requests approve {request.id}" in waiting
    assert (request.agent, request.thread_id, request.principal) == (AGENT, SESSION, "app:ci")
    assert gate.agent == AGENT


def test_an_ask_waits_off_the_event_loop_and_its_result_settles_it(gate: Gate) -> None:
    hooks = signoff_hooks(gate, wait_seconds=20)
    args = {"command": "make build"}
    seen: list[str] = []
    ticks: list[float] = []

    async def ticker(done: asyncio.Event) -> None:
        while not done.is_set():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.02)

    async def scenario() -> tuple[str, str]:
        done = asyncio.Event()
        ticking = asyncio.create_task(ticker(done))
        worker = approve_when_asked(gate, seen)
        try:
            return decision(await hook(hooks["PreToolUse"],
                                       event("PreToolUse", "Bash", args, "t1")))
        finally:
            done.set()
            await ticking
            await asyncio.to_thread(worker.join)

    kind, reason = asyncio.run(scenario())
    assert kind == "allow" and seen[0] in reason
    assert len(ticks) >= 5  # the loop ran while the hook waited for the human
    assert gate.get_request(seen[0]).status is RequestStatus.EXECUTING
    reply = asyncio.run(hook(hooks["PostToolUse"], event(
        "PostToolUse", "Bash", args, "t1", tool_response={"stdout": "ok", "stderr": ""})))
    assert reply == {}
    assert gate.get_request(seen[0]).status is RequestStatus.SUCCEEDED
    assert gate.verify_audit().ok


def test_a_timed_out_ask_is_named_and_the_retry_after_approval_runs(gate: Gate) -> None:
    permit = signoff_can_use_tool(gate, wait_seconds=0.3)
    args = {"file_path": "/nowhere/b.py", "content": "x = 2\n"}

    async def attempt(use: str) -> Any:
        announced = await hook(permit.hooks["PreToolUse"], event("PreToolUse", "Write", args, use))
        assert decision(announced) == ("ask", "signoff judges this call")
        return await permit("Write", args, context(use))

    first = asyncio.run(attempt("t1"))
    (request,) = gate.pending_on_thread(SESSION)
    assert isinstance(first, PermissionResultDeny) and request.id in first.message
    assert not first.interrupt  # the model hears why and may try again
    approve(gate, request.id)
    second = asyncio.run(attempt("t2"))
    assert second == PermissionResultAllow(updated_input=args)
    assert gate.get_request(request.id).status is RequestStatus.EXECUTING
    failure = event("PostToolUseFailure", "Write", args, "t2", error="disk full")
    assert asyncio.run(hook(permit.hooks["PostToolUseFailure"], failure)) == {}
    assert gate.get_request(request.id).status is RequestStatus.FAILED
    assert permit.sessions == {}


def test_an_approvers_edit_runs_as_approved_through_hooks_and_can_use_tool(
        gate: Gate, workspace: Path) -> None:
    target = workspace / "app.py"
    target.write_text("x = 1\n")
    proposed = {"file_path": str(target), "old_string": "x = 1", "new_string": "x = 2"}
    edited = {**proposed, "new_string": "x = 3"}
    hooks = signoff_hooks(gate, wait_seconds=0.3)
    permit = signoff_can_use_tool(gate, wait_seconds=0.3)

    # The hooks: the approved arguments run as the hook's updatedInput.
    asyncio.run(hook(hooks["PreToolUse"], event("PreToolUse", "Edit", proposed, "t1")))
    (request,) = gate.pending_on_thread(SESSION)
    stored = json.loads(request.args)
    assert (stored["old_string"], stored["new_string"]) == ("x = 1", "x = 2")  # the diff
    approve(gate, request.id, edited)
    output = asyncio.run(hook(hooks["PreToolUse"],
                              event("PreToolUse", "Edit", proposed, "t2")))
    kind, _ = decision(output)
    assert kind == "allow" and output["hookSpecificOutput"]["updatedInput"] == edited
    asyncio.run(hook(hooks["PostToolUse"], event(
        "PostToolUse", "Edit", edited, "t2", tool_response={"filePath": str(target)})))
    assert gate.get_request(request.id).status is RequestStatus.SUCCEEDED

    # can_use_tool: the approved arguments run, as approved; the result settles them.
    async def attempt(use: str) -> Any:
        await hook(permit.hooks["PreToolUse"], event("PreToolUse", "Edit", proposed, use))
        return await permit("Edit", proposed, context(use))

    asyncio.run(attempt("t3"))
    (again,) = gate.pending_on_thread(SESSION)
    approve(gate, again.id, edited)
    ran = asyncio.run(attempt("t4"))
    assert ran == PermissionResultAllow(updated_input=edited)
    # The CLI reports the call with the input it ran: the edited one.
    asyncio.run(hook(permit.hooks["PostToolUse"], event(
        "PostToolUse", "Edit", edited, "t4", tool_response={"filePath": str(target)})))
    assert gate.get_request(again.id).status is RequestStatus.SUCCEEDED


def test_can_use_tool_without_its_hooks_denies(gate: Gate) -> None:
    permit = signoff_can_use_tool(gate)
    result = asyncio.run(permit("Read", {"file_path": "/etc/hostname"}, context("t9")))
    assert isinstance(result, PermissionResultDeny)
    assert "hooks=<the callback>.hooks" in result.message
    assert gate.list_requests() == []


class Broken:
    """A gate whose store is down."""

    def propose(self, *_: Any, **__: Any) -> Any:
        raise ConnectionError("the database is down")

    def report(self, *_: Any, **__: Any) -> Any:
        raise ConnectionError("the database is down")

    def note_call_result(self, *_: Any, **__: Any) -> Any:
        raise ConnectionError("the database is down")


@pytest.mark.parametrize("data", [
    {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}},
    {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash",
     "tool_input": "ls", "tool_use_id": "t1"},
    {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Bash",
     "tool_input": {}, "tool_use_id": "t1"}])
def test_bad_input_denies(gate: Gate, data: dict[str, Any]) -> None:
    for hooks in (signoff_hooks(gate), signoff_can_use_tool(gate).hooks):
        kind, reason = decision(asyncio.run(hook(hooks["PreToolUse"], data)))
        assert kind == "deny" and "could not read the hook input" in reason


def test_an_outage_denies_and_a_lost_result_is_said() -> None:
    broken: Any = Broken()
    kind, reason = decision(asyncio.run(hook(signoff_hooks(broken)["PreToolUse"],
                                             event("PreToolUse", "Bash", {"command": "ls"},
                                                   "t1"))))
    assert kind == "deny" and "the database is down" in reason
    permit = signoff_can_use_tool(broken)
    asyncio.run(hook(permit.hooks["PreToolUse"], event("PreToolUse", "Read", {}, "t2")))
    result = asyncio.run(permit("Read", {}, context("t2")))
    assert isinstance(result, PermissionResultDeny) and "the database is down" in result.message
    said = asyncio.run(hook(permit.hooks["PostToolUse"], event(
        "PostToolUse", "Read", {}, "t2", tool_response="hi")))
    assert "was not recorded" in said["systemMessage"]


def test_a_cancelled_callback_stops_waiting_and_claims_nothing(
        gate: Gate, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claude_agent, "_SLICE", 0.05)  # how often a wait looks up
    permit = signoff_can_use_tool(gate, wait_seconds=60)
    args = {"command": "make deploy"}

    async def scenario() -> float:
        await hook(permit.hooks["PreToolUse"], event("PreToolUse", "Bash", args, "t1"))
        asking = asyncio.create_task(permit("Bash", args, context("t1")))
        while not gate.pending_on_thread(SESSION):
            await asyncio.sleep(0.02)
        asking.cancel()  # the CLI withdrew the question (an interrupt, the client closed)
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await asking
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 1.0
    (request,) = gate.pending_on_thread(SESSION)
    approve(gate, request.id)
    time.sleep(0.3)  # the abandoned wait's next slice sees the cancellation, not the claim
    assert gate.get_request(request.id).status is RequestStatus.APPROVED


def test_wait_seconds_out_of_range_is_refused(gate: Gate) -> None:
    for wait in (0, -1, 86401):
        with pytest.raises(ValueError, match="wait_seconds"):
            signoff_hooks(gate, wait_seconds=wait)
