"""``signoff_can_use_tool`` and ``signoff_hooks`` over ``signoff.remote.Client``: a real
``signoff serve`` with an agent's token — allowed, asked and named, approved with the CLI,
retried and run, an approver's edit run as approved, the result reported."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext

from signoff.adapters.claude_agent import signoff_can_use_tool, signoff_hooks
from signoff.policy.starter import starter_toml
from signoff.remote import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))
from procs import Live, live_server

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Live]:
    with live_server("sqlite", tmp_path, starter_toml("{root}", "claude-code")) as running:
        yield running


def event(name: str, tool: str, args: dict[str, Any], use: str, **more: Any) -> Any:
    return {"session_id": "remote-session", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
            "hook_event_name": name, "tool_name": tool, "tool_input": args,
            "tool_use_id": use, **more}


async def call_hook(matchers: Any, data: Any) -> dict[str, Any]:
    return dict(await matchers[0].hooks[0](data, data["tool_use_id"], {"signal": None}))


def pending(live: Live) -> list[dict[str, Any]]:
    with live.client("ann") as ann:
        found: list[dict[str, Any]] = ann.get(
            "/api/v1/requests", params={"status": "pending"}).json()["requests"]
    return found


def status(live: Live, request_id: str) -> str:
    with live.client("ann") as ann:
        return str(ann.get(f"/api/v1/requests/{request_id}").json()["status"])


def test_can_use_tool_through_a_server(served: Live, tmp_path: Path) -> None:
    with Client(served.url, served.tokens["bot"]) as client:
        permit = signoff_can_use_tool(client, wait_seconds=0.5, inbox_url=served.url,
                                      claims_dir=tmp_path / "claims")

        async def attempt(tool: str, args: dict[str, Any], use: str) -> Any:
            await call_hook(permit.hooks["PreToolUse"], event("PreToolUse", tool, args, use))
            return await permit(tool, args, ToolPermissionContext(tool_use_id=use))

        status_call = {"command": "git status"}
        assert asyncio.run(attempt("Bash", status_call, "t1")) == \
            PermissionResultAllow(updated_input=status_call)

        args = {"command": "make release"}
        asked = asyncio.run(attempt("Bash", args, "t2"))
        (request,) = pending(served)
        assert isinstance(asked, PermissionResultDeny)
        assert f"{served.url}/requests/{request['id']}" in asked.message
        # Over the API the asker is the token's account; the server names no agent.
        assert (request["thread_id"], request["principal"]) == ("remote-session", "bot")

        # The approver edits the command; the approved arguments are what runs.
        edited = {"command": "make release DRY_RUN=1"}
        served.cli("requests", "edit", request["id"], "--args", json.dumps(edited),
                   "--token", served.tokens["ann"])
        assert asyncio.run(attempt("Bash", args, "t3")) == \
            PermissionResultAllow(updated_input=edited)
        assert status(served, request["id"]) == "executing"
        reply = asyncio.run(call_hook(permit.hooks["PostToolUse"], event(
            "PostToolUse", "Bash", edited, "t3", tool_response={"stdout": "ok"})))
        assert reply == {}
        assert status(served, request["id"]) == "succeeded"


def test_hooks_through_a_server(served: Live, tmp_path: Path) -> None:
    with Client(served.url, served.tokens["bot"]) as client:
        hooks = signoff_hooks(client, wait_seconds=0.5, claims_dir=tmp_path / "claims")
        args = {"command": "make release"}

        def pre(use: str) -> tuple[str, str]:
            out = asyncio.run(call_hook(hooks["PreToolUse"],
                                        event("PreToolUse", "Bash", args, use)))
            specific = out["hookSpecificOutput"]
            return specific["permissionDecision"], specific["permissionDecisionReason"]

        kind, reason = pre("t1")
        (request,) = pending(served)
        assert kind == "deny" and request["id"] in reason
        served.cli("requests", "approve", request["id"], "--token", served.tokens["ann"])
        kind, reason = pre("t2")
        assert kind == "allow" and request["id"] in reason
        failure = event("PostToolUseFailure", "Bash", args, "t2", error="exit status 2")
        assert asyncio.run(call_hook(hooks["PostToolUseFailure"], failure)) == {}
        assert status(served, request["id"]) == "failed"
