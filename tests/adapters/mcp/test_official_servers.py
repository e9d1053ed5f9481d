"""``signoff mcp-proxy`` in front of the official MCP servers from npm, over stdio.

The upstreams are ``@modelcontextprotocol/server-filesystem`` and
``@modelcontextprotocol/server-everything`` (pinned in ``node/package.json``, installed
once by ``mcpkit.npm_servers``); the client is the official ``mcp`` Python client.
Every test runs the proxy as a real process on its own site (workspace, policy, SQLite
database) and checks what really happened: the files on disk, the requests and audit
events in the database, the answers compared with a direct connection to the server.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import types
from mcpkit import (
    Site,
    answering,
    direct,
    dump,
    make_site,
    npm_servers,
    pending,
    proxied,
    run,
    signoff_meta,
    text,
    wait_for,
)

from signoff import Decision
from signoff.model import ApprovalRequest, RequestStatus
from signoff.policy.starter import starter_toml

SERVER_TESTS = str(Path(__file__).parents[2] / "server")  # procs.py: real `signoff serve`
if SERVER_TESTS not in sys.path:
    sys.path.insert(0, SERVER_TESTS)
from procs import Server, signoff, start_server  # noqa: E402

pytestmark = pytest.mark.slow

EVERYTHING_POLICY = """\
[policy]
unknown_tools = "allow"
default_expires = "1h"
[mcp]
server = "ev"
[workspace]
root = "{root}"
outside = "deny"
name = "ev-ws"
[[rules]]
id = "no-env"
effect = "deny"
tool = "ev__get-env"
reason = "the server's environment is not for the model"
[[rules]]
id = "sampling-asks"
effect = "ask"
tool = "ev__trigger-sampling-request"
"""

# A wire tap between the proxy and the server: relays both ways, writes each message to a
# file as "C <json>" (towards the server) or "S <json>" (from it).
TAP = """\
import subprocess, sys, threading
log = open(sys.argv[1], "a", buffering=1)
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def to_server():
    for line in sys.stdin.buffer:
        log.write("C " + line.decode())
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
threading.Thread(target=to_server, daemon=True).start()
for line in child.stdout:
    log.write("S " + line.decode())
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(child.wait())
"""


# ---- helpers ------------------------------------------------------------------------------------


def audit(site: Site) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(kind, request id, data) of every audit event so far."""
    gate = site.gate()
    try:
        gate.flush()
        return [(e.kind, e.request_id, json.loads(e.data) if e.data else {})
                for e in gate.store.audit_events()]
    finally:
        gate.close()


def request_named(site: Site, request_id: str) -> ApprovalRequest:
    [request] = [r for r in site.requests() if r.id == request_id]
    return request


@pytest.fixture(scope="module")
def bins() -> Path:
    return npm_servers()


def fs_site(tmp_path: Path) -> Site:
    """A site whose policy is the ``mcp-filesystem`` preset for its workspace."""
    site = make_site(tmp_path)
    site.policy.write_text(starter_toml(str(site.root), "mcp-filesystem"), "utf-8")
    return site


def fs(bins: Path, site: Site) -> list[str]:
    return [str(bins / "mcp-server-filesystem"), str(site.root)]


def everything(bins: Path) -> list[str]:
    return [str(bins / "mcp-server-everything"), "stdio"]


def decide_when_asked(site: Site, decision: Decision) -> threading.Thread:
    """Decide the one pending request, once it is there, in the kernel (as ``ann``)."""
    def decide() -> None:
        [request] = wait_for(lambda: pending(site), what="a pending request")
        gate = site.gate()
        try:
            identity, _ = gate.add_user("ann")
            gate.decide(request.id, decision, identity=identity)
        finally:
            gate.close()

    thread = threading.Thread(target=decide, daemon=True)
    thread.start()
    return thread


# ---- filesystem: passthrough, allow, deny -------------------------------------------------------



@pytest.fixture(params=["stdio", "http"])
def via(request: pytest.FixtureRequest) -> str:
    """How the client reaches the proxy: stdio, or streamable HTTP (--listen)."""
    return str(request.param)

def test_filesystem_handshake_and_tool_list_are_the_servers_own(bins: Path,
                                                                tmp_path: Path, via: str) -> None:
    site = fs_site(tmp_path)

    async def walk(client: Any) -> dict[str, Any]:
        init = client.session.initialize_result
        return {"server": dump(init.server_info), "capabilities": dump(init.capabilities),
                "instructions": init.instructions, "tools": dump(await client.list_tools()),
                "ping": dump(await client.session.send_ping()),
                "allowed": dump(await client.call_tool("list_allowed_directories", {}))}

    async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with direct(site, upstream=fs(bins, site), mode="legacy") as plain:
            baseline = await walk(plain)
        async with proxied(site, upstream=fs(bins, site), via=via, mode="legacy") as client:
            through = await walk(client)
        # The default client probes server/discover first; through the proxy the server's
        # refusal reaches it and it falls back to the handshake, as it does directly.
        async with proxied(site, upstream=fs(bins, site)) as client:
            probed = await walk(client)
        return baseline, through, probed

    baseline, through, probed = run(main)
    assert through == baseline
    assert probed == baseline
    assert through["allowed"]["content"][0]["text"] == f"Allowed directories:\n{site.root}"
    names = {t["name"] for t in through["tools"]["tools"]}
    assert {"read_text_file", "write_file", "edit_file", "move_file",
            "list_allowed_directories"} <= names
    assert site.requests() == []


def test_the_servers_roots_request_reaches_the_client(bins: Path, tmp_path: Path) -> None:
    # The filesystem server asks a client that has roots for them (roots/list, a request of
    # the server's own) and takes them as its allowed directories.
    site = fs_site(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    asked: list[str] = []

    async def roots(_ctx: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri=other.as_uri())])  # type: ignore[arg-type]

    async def allowed(client: Any) -> str:
        await anyio.to_thread.run_sync(lambda: wait_for(lambda: asked, what="roots/list"))
        for _ in range(50):  # the server applies the roots just after it has them
            listed = text(await client.call_tool("list_allowed_directories", {}))
            if str(other) in listed:
                return listed
            await anyio.sleep(0.1)
        return listed

    async def main() -> tuple[str, str]:
        async with direct(site, upstream=fs(bins, site), mode="legacy",
                          list_roots_callback=roots) as plain:
            baseline = await allowed(plain)
        asked.clear()
        async with proxied(site, upstream=fs(bins, site), mode="legacy",
                           list_roots_callback=roots) as client:
            through = await allowed(client)
        return baseline, through

    baseline, through = run(main)
    assert through == baseline == f"Allowed directories:\n{other}"


def test_filesystem_reads_inside_are_allowed_and_outside_denied(bins: Path,
                                                                tmp_path: Path, via: str) -> None:
    site = fs_site(tmp_path)
    (site.root / "notes.txt").write_text("line one\nline two\n", "utf-8")
    (site.root / "escape").symlink_to("/etc/hostname")
    inside = {"path": str(site.root / "notes.txt")}

    async def main() -> dict[str, Any]:
        async with direct(site, upstream=fs(bins, site), mode="legacy") as plain:
            baseline = dump(await plain.call_tool("read_text_file", inside))
            baseline_head = dump(await plain.call_tool("read_text_file", {**inside, "head": 1}))
        async with proxied(site, upstream=fs(bins, site), via=via, mode="legacy") as client:
            return {
                "baseline": baseline, "baseline_head": baseline_head,
                "read": dump(await client.call_tool("read_text_file", inside)),
                "head": dump(await client.call_tool("read_text_file", {**inside, "head": 1})),
                "relative": await client.call_tool("read_text_file", {"path": "notes.txt"}),
                "outside": await client.call_tool("read_text_file",
                                                  {"path": "/etc/hostname"}),
                "dotdot": await client.call_tool(
                    "read_text_file", {"path": str(site.root / ".." / "signoff.toml")}),
                "symlink": await client.call_tool("read_text_file",
                                                  {"path": str(site.root / "escape")}),
                "many": await client.call_tool("read_multiple_files", {
                    "paths": [inside["path"], "/etc/hostname"]}),
            }

    out = run(main)
    assert out["read"] == out["baseline"]
    assert out["read"]["content"][0]["text"] == "line one\nline two\n"
    assert out["head"] == out["baseline_head"]
    assert not out["relative"].is_error and text(out["relative"]) == "line one\nline two\n"
    for name in ("outside", "dotdot", "symlink", "many"):
        refused = out[name]
        assert refused.is_error, name
        assert signoff_meta(refused)["outcome"] == "denied", name
        assert "outside workspace 'workspace'" in text(refused), (name, text(refused))
    assert "/etc/hostname" in text(out["outside"])
    assert site.requests() == []  # a denial asks nobody
    events = audit(site)
    kinds = [kind for kind, _, _ in events]
    assert kinds.count("call.allowed") == 3 and kinds.count("call.denied") == 4
    results = [data for kind, _, data in events if kind == "call.result"]
    assert [r["tool"] for r in results] == ["fs__read_text_file"] * 3
    assert all(r["outcome"] == "ok" and r["result_hash"].startswith("sha256:") for r in results)


# ---- filesystem: writes asked by elicitation ----------------------------------------------------


def test_filesystem_write_accepted_in_the_dialog_is_written_once(bins: Path,
                                                                 tmp_path: Path, via: str) -> None:
    site = fs_site(tmp_path)
    target = site.root / "hello.txt"
    callback = answering("accept")

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with proxied(site, upstream=fs(bins, site), via=via, mode="legacy", wait=20,
                           elicitation_callback=callback) as client:
            result = await client.call_tool("write_file", {"path": str(target),
                                                           "content": "hello, world\n"})
        # An .env file needs two approvers with role security: not one person's dialog.
        async with proxied(site, upstream=fs(bins, site), via=via, mode="legacy", wait=1,
                           elicitation_callback=callback) as client:
            env = await client.call_tool("write_file", {"path": str(site.root / ".env"),
                                                        "content": "TOKEN=x\n"})
        return result, env

    result, env = run(main)
    assert signoff_meta(env)["outcome"] == "pending" and not (site.root / ".env").exists()
    env_request = request_named(site, signoff_meta(env)["request_id"])
    assert env_request.roles == ("security",) and env_request.approvals_required == 2
    assert not result.is_error, text(result)
    assert text(result) == f"Successfully wrote to {target}"
    assert target.read_text("utf-8") == "hello, world\n"
    [request] = [r for r in site.requests() if r.id != env_request.id]
    assert request.tool == "fs__write_file" and request.status is RequestStatus.SUCCEEDED
    [question] = callback.seen  # the .env write was never put to the dialog
    assert request.id in question and "fs__write_file" in question
    assert "hello, world" in question
    events = audit(site)
    assert [k for k, rid, _ in events if rid == request.id and k == "request.executing"] \
        == ["request.executing"]  # claimed once: it ran once
    [recorded] = [d for k, rid, d in events if k == "decision.recorded" and rid == request.id]
    assert recorded.get("via") == "mcp-elicitation"


def test_filesystem_write_declined_in_the_dialog_writes_nothing(bins: Path,
                                                                tmp_path: Path) -> None:
    site = fs_site(tmp_path)
    target = site.root / "never.txt"
    callback = answering("decline")

    async def main() -> types.CallToolResult:
        async with proxied(site, upstream=fs(bins, site), mode="legacy", wait=20,
                           elicitation_callback=callback) as client:
            return await client.call_tool("write_file", {"path": str(target),
                                                         "content": "nope\n"})

    result = run(main)
    assert result.is_error and "rejected" in text(result)
    [request] = site.requests()
    assert signoff_meta(result) == {"outcome": "rejected", "code": "rejected",
                                    "request_id": request.id}
    assert request.status is RequestStatus.REJECTED
    assert not target.exists()
    assert len(callback.seen) == 1
    assert "request.executing" not in [k for k, _, _ in audit(site)]


def test_filesystem_write_request_shows_the_diff(bins: Path, tmp_path: Path) -> None:
    site = fs_site(tmp_path)
    existing = site.root / "config.ini"
    existing.write_text("[core]\nmode = old\n", "utf-8")
    fresh = site.root / "fresh.txt"

    edits = [{"oldText": "mode = old", "newText": "mode = edited"}]

    async def main() -> list[types.CallToolResult]:
        async with proxied(site, "--no-elicit", upstream=fs(bins, site), mode="legacy",
                           wait=0.5) as client:
            return [await client.call_tool("write_file", {
                        "path": str(existing), "content": "[core]\nmode = new\n"}),
                    await client.call_tool("write_file", {
                        "path": str(fresh), "content": "brand new\n"}),
                    # the preset's edit-preview rule: a dry run writes nothing, needs nobody
                    await client.call_tool("edit_file", {
                        "path": str(existing), "edits": edits, "dryRun": True}),
                    await client.call_tool("edit_file", {"path": str(existing),
                                                         "edits": edits})]

    changed, created, preview, edit_call = run(main)
    assert not preview.is_error and "+mode = edited" in text(preview)
    assert signoff_meta(edit_call)["outcome"] == "pending"
    assert len(site.requests()) == 3  # the two writes and the real edit
    assert signoff_meta(changed)["outcome"] == "pending"
    assert signoff_meta(created)["outcome"] == "pending"
    by_id = {r.id: r for r in site.requests()}
    edit = by_id[signoff_meta(changed)["request_id"]]
    new = by_id[signoff_meta(created)["request_id"]]
    [change] = edit.changes
    assert change["kind"] == "diff" and change["resolved"] == str(existing)
    assert "-mode = old" in change["diff"] and "+mode = new" in change["diff"]
    [addition] = new.changes
    assert addition["kind"] == "new" and "+brand new" in addition["diff"]
    # nothing was written while they wait
    assert existing.read_text("utf-8") == "[core]\nmode = old\n" and not fresh.exists()


def test_filesystem_write_to_a_file_changed_meanwhile_is_not_run(bins: Path,
                                                                 tmp_path: Path) -> None:
    # The approver saw a diff against the file as it was; someone changes it before the
    # approval: the approved call must not overwrite what they never saw.
    site = fs_site(tmp_path)
    target = site.root / "shared.txt"
    target.write_text("original\n", "utf-8")

    def change_then_approve() -> None:
        [request] = wait_for(lambda: pending(site), what="a pending request")
        target.write_text("someone else's edit\n", "utf-8")
        gate = site.gate()
        try:
            identity, _ = gate.add_user("ann")
            gate.decide(request.id, Decision.approve(), identity=identity)
        finally:
            gate.close()

    async def main() -> types.CallToolResult:
        thread = threading.Thread(target=change_then_approve, daemon=True)
        thread.start()
        async with proxied(site, "--no-elicit", upstream=fs(bins, site), mode="legacy",
                           wait=30) as client:
            result = await client.call_tool("write_file", {"path": str(target),
                                                           "content": "mine\n"})
        thread.join(10)
        return result

    result = run(main)
    [request] = site.requests()
    assert result.is_error and signoff_meta(result) == {
        "outcome": "invalidated", "code": "resource_changed", "request_id": request.id}
    assert str(target) in text(result)
    assert target.read_text("utf-8") == "someone else's edit\n"
    assert request.status is RequestStatus.INVALIDATED
    assert "request.executing" not in [k for k, _, _ in audit(site)]


# ---- filesystem: the inbox over HTTP ------------------------------------------------------------


def approver_token(site: Site, name: str = "ann") -> str:
    signoff("db", "migrate", "--db", str(site.db), cwd=site.dir)
    added = signoff("users", "add", name, "--kind", "approver", "--db", str(site.db),
                    "--json", cwd=site.dir)
    return str(json.loads(added.stdout)["token"])


def decide_over_http(server: Server, token: str, site: Site, answers: list[httpx.Response],
                     *bodies: dict[str, Any]) -> threading.Thread:
    """POST each decision in turn to the one pending request, once it is there."""
    def decide() -> None:
        [request] = wait_for(lambda: pending(site), what="a pending request")
        with server.client(token) as http:
            for body in bodies:
                answers.append(http.post(f"/api/v1/requests/{request.id}/decisions",
                                         json=body))

    thread = threading.Thread(target=decide, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def inbox(tmp_path: Path) -> Any:
    site = fs_site(tmp_path)
    token = approver_token(site)
    server = start_server(str(site.db), site.dir)
    try:
        yield site, server, token
    finally:
        server.stop()


def test_filesystem_write_approved_in_the_inbox_over_http(bins: Path, inbox: Any, via: str) -> None:
    site, server, token = inbox
    target = site.root / "approved.txt"
    answers: list[httpx.Response] = []

    async def main() -> types.CallToolResult:
        thread = decide_over_http(server, token, site, answers, {"kind": "approve"})
        async with proxied(site, "--no-elicit", upstream=fs(bins, site), via=via, mode="legacy",
                           wait=30) as client:
            result = await client.call_tool("write_file", {"path": str(target),
                                                           "content": "via the inbox\n"})
        thread.join(10)
        return result

    result = run(main)
    [answer] = answers
    assert answer.status_code == 200, answer.text
    assert not result.is_error, text(result)
    assert text(result) == f"Successfully wrote to {target}"
    assert target.read_text("utf-8") == "via the inbox\n"
    [request] = site.requests()
    assert request.status is RequestStatus.SUCCEEDED
    with server.client(token) as http:
        shown = http.get(f"/api/v1/requests/{request.id}").json()
    assert shown["status"] == "succeeded"
    assert [d["approver"] for d in shown["decisions"]] == ["ann"]


def test_filesystem_write_edited_in_the_inbox_lands_at_the_edited_path(bins: Path,
                                                                       inbox: Any) -> None:
    site, server, token = inbox
    asked = site.root / "draft.txt"
    edited = site.root / "sub" / "final.txt"
    edited.parent.mkdir()
    answers: list[httpx.Response] = []
    outside = site.dir / "outside.txt"
    # An edit is judged like a call: one that leaves the workspace is refused, and the
    # request stays pending for a better one.
    escape = {"kind": "edit", "args": {"path": str(outside), "content": "the text\n"}}
    body = {"kind": "edit", "reason": "keep drafts out of the root",
            "args": {"path": str(edited), "content": "the text\n"}}

    async def main() -> types.CallToolResult:
        thread = decide_over_http(server, token, site, answers, escape, body)
        async with proxied(site, "--no-elicit", upstream=fs(bins, site), mode="legacy",
                           wait=30) as client:
            result = await client.call_tool("write_file", {"path": str(asked),
                                                           "content": "the text\n"})
        thread.join(10)
        return result

    result = run(main)
    refused, answer = answers
    assert refused.status_code == 422, refused.text
    assert "outside workspace 'workspace'" in refused.json()["detail"]
    assert answer.status_code == 200, answer.text
    assert not result.is_error, text(result)
    assert text(result) == f"Successfully wrote to {edited}"
    assert not outside.exists()
    assert edited.read_text("utf-8") == "the text\n"
    assert not asked.exists()
    [request] = site.requests()
    assert request.status is RequestStatus.SUCCEEDED
    assert json.loads(request.approved_args or "{}")["path"] == str(edited)
    assert json.loads(request.args)["path"] == str(asked)


# ---- filesystem: parallel calls -----------------------------------------------------------------


def test_filesystem_reads_run_while_a_write_waits(bins: Path, tmp_path: Path) -> None:
    site = fs_site(tmp_path)
    for i in range(6):
        (site.root / f"f{i}.txt").write_text(f"content {i}\n", "utf-8")
    target = site.root / "slow-write.txt"

    async def main() -> tuple[list[str], bool, str, list[str]]:
        done: list[str] = []
        async with proxied(site, "--no-elicit", upstream=fs(bins, site), mode="legacy",
                           wait=30) as client:
            async def write() -> None:
                result = await client.call_tool("write_file", {"path": str(target),
                                                               "content": "at last\n"})
                done.append("write:" + text(result))

            async def read(i: int) -> None:
                result = await client.call_tool("read_text_file",
                                                {"path": str(site.root / f"f{i}.txt")})
                done.append(text(result))

            async with anyio.create_task_group() as tg:
                tg.start_soon(write)
                await anyio.to_thread.run_sync(lambda: wait_for(lambda: pending(site)))
                async with anyio.create_task_group() as reads:
                    for i in range(6):
                        reads.start_soon(read, i)
                # every read is back; the write still waits for its human
                before = list(done)
                written_before = target.exists()
                [waiting] = site.requests()
                decide_when_asked(site, Decision.approve())
        return before, written_before, waiting.status.value, done[len(before):]

    before, written_before, status_before, after = run(main)
    assert sorted(before) == sorted(f"content {i}\n" for i in range(6))
    assert not written_before and status_before == "pending"
    assert after == [f"write:Successfully wrote to {target}"]
    assert target.read_text("utf-8") == "at last\n"
    [request] = site.requests()
    assert request.status is RequestStatus.SUCCEEDED


# ---- everything: resources, prompts, tools, progress, cancellation, logging ---------------------


@pytest.fixture
def ev_site(tmp_path: Path) -> Site:
    site = make_site(tmp_path)
    site.policy.write_text(EVERYTHING_POLICY.format(root=site.root), "utf-8")
    return site


def test_everything_resources_and_prompts_pass_through(bins: Path, ev_site: Site, via: str) -> None:
    site = ev_site

    async def walk(client: Any) -> dict[str, Any]:
        resources = await client.list_resources()
        first = resources.resources[0].uri
        # a dynamic resource says when it was made: compare all but the clock
        dynamic = dump(await client.read_resource("demo://resource/dynamic/text/2"))
        for item in dynamic["contents"]:
            item["text"] = item["text"].split(" created at ")[0]
        return {
            "capabilities": dump(client.session.initialize_result.capabilities),
            "resources": dump(resources),
            "templates": dump(await client.list_resource_templates()),
            "read": dump(await client.read_resource(str(first))),
            "dynamic": dynamic,
            "prompts": dump(await client.list_prompts()),
            "simple": dump(await client.get_prompt("simple-prompt")),
            "args": dump(await client.get_prompt("args-prompt",
                                                 {"city": "Lyon", "state": "Rhône"})),
            "complete": dump(await client.complete(
                types.PromptReference(type="ref/prompt", name="completable-prompt"),
                {"name": "department", "value": "E"})),
        }

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with direct(site, upstream=everything(bins), mode="legacy") as plain:
            baseline = await walk(plain)
        async with proxied(site, upstream=everything(bins), via=via, mode="legacy") as client:
            through = await walk(client)
        return baseline, through

    baseline, through = run(main)
    assert through == baseline
    assert through["resources"]["resources"]
    assert through["read"]["contents"][0]["text"]
    assert through["args"]["messages"][0]["content"]["text"] == "What's weather in Lyon, Rhône?"
    assert site.requests() == []


def test_everything_tools_allowed_and_denied(bins: Path, ev_site: Site) -> None:
    site = ev_site

    async def tools(client: Any) -> dict[str, Any]:
        return {"echo": dump(await client.call_tool("echo", {"message": "hi there"})),
                "sum": dump(await client.call_tool("get-sum", {"a": 2, "b": 40})),
                "structured": dump(await client.call_tool("get-structured-content",
                                                          {"location": "Chicago"}))}

    async def main() -> tuple[dict[str, Any], dict[str, Any], types.CallToolResult]:
        async with direct(site, upstream=everything(bins), mode="legacy") as plain:
            baseline = await tools(plain)
        async with proxied(site, upstream=everything(bins), mode="legacy") as client:
            through = await tools(client)
            env = await client.call_tool("get-env", {})
        return baseline, through, env

    baseline, through, env = run(main)
    assert through == baseline
    assert through["echo"]["content"] == [{"type": "text", "text": "Echo: hi there"}]
    assert env.is_error and "the server's environment is not for the model" in text(env)
    assert signoff_meta(env) == {"outcome": "denied", "code": "rule_deny"}
    assert site.requests() == []
    results = [d for k, _, d in audit(site) if k == "call.result"]
    assert sorted(r["tool"] for r in results) == ["ev__echo", "ev__get-structured-content",
                                                  "ev__get-sum"]


def test_everything_progress_comes_through(bins: Path, ev_site: Site, via: str) -> None:
    site = ev_site
    args = {"duration": 0.8, "steps": 4}

    async def long_run(client: Any) -> tuple[dict[str, Any], list[Any]]:
        seen: list[Any] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        result = await client.call_tool("trigger-long-running-operation", args,
                                        progress_callback=on_progress)
        return dump(result), seen

    async def main() -> tuple[Any, Any]:
        async with direct(site, upstream=everything(bins), mode="legacy") as plain:
            baseline = await long_run(plain)
        async with proxied(site, upstream=everything(bins), via=via, mode="legacy") as client:
            through = await long_run(client)
        return baseline, through

    baseline, through = run(main)
    assert through == baseline
    assert through[1] == [(1, 4, None), (2, 4, None), (3, 4, None), (4, 4, None)]


def test_everything_asks_the_client_through_the_proxy(bins: Path, ev_site: Site) -> None:
    # The server's own requests to the client (elicitation/create, sampling/createMessage)
    # pass through, ids and all, also while an approved call runs: trigger-sampling-request
    # is asked (signoff's own dialog), then, approved, its run asks the client to sample.
    site = ev_site
    questions: list[str] = []
    prompts: list[Any] = []

    async def elicit(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        if params.message.startswith("signoff: "):
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="accept", content={"name": "Ann Example",
                                                            "check": True})

    async def sample(_ctx: Any, params: types.CreateMessageRequestParams
                     ) -> types.CreateMessageResult:
        prompts.append(dump(params))
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(type="text", text="42"))

    async def ask(client: Any) -> dict[str, Any]:
        return {"elicit": dump(await client.call_tool("trigger-elicitation-request", {})),
                "sample": dump(await client.call_tool("trigger-sampling-request",
                                                      {"prompt": "the answer?",
                                                       "maxTokens": 5}))}

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with direct(site, upstream=everything(bins), mode="legacy",
                          elicitation_callback=elicit, sampling_callback=sample) as plain:
            baseline = await ask(plain)
        async with proxied(site, upstream=everything(bins), mode="legacy", wait=20,
                           elicitation_callback=elicit, sampling_callback=sample) as client:
            through = await ask(client)
        return baseline, through

    baseline, through = run(main)
    assert through == baseline
    assert "Name: Ann Example" in through["elicit"]["content"][1]["text"]
    assert '"text": "42"' in through["sample"]["content"][0]["text"]
    server_question = "Please provide inputs for the following fields:"
    [asked] = site.requests()
    assert asked.tool == "ev__trigger-sampling-request"
    assert asked.status is RequestStatus.SUCCEEDED
    # direct: the server's question; proxied: the server's, then signoff's for the ask
    assert questions[0] == questions[1] == server_question
    assert questions[2].startswith("signoff: ") and asked.id in questions[2]
    assert len(questions) == 3
    assert len(prompts) == 2 and prompts[0] == prompts[1]


def tapped(upstream: list[str], tmp_path: Path) -> tuple[list[str], Path]:
    tap, wire = tmp_path / "tap.py", tmp_path / "wire.txt"
    tap.write_text(TAP, "utf-8")
    return [sys.executable, str(tap), str(wire), *upstream], wire


def wire_messages(wire: Path) -> list[tuple[str, dict[str, Any]]]:
    return [(line[0], json.loads(line[2:])) for line in wire.read_text("utf-8").splitlines()]


def test_everything_cancelled_call_leaves_the_proxy_usable(bins: Path, ev_site: Site,
                                                           tmp_path: Path) -> None:
    site = ev_site
    upstream, wire = tapped(everything(bins), tmp_path)

    async def main() -> tuple[bool, list[Any], types.CallToolResult, types.CallToolResult]:
        seen: list[Any] = []

        async with proxied(site, upstream=upstream, mode="legacy") as client:
            with anyio.CancelScope() as scope:
                async def on_progress(progress: float, total: float | None,
                                      message: str | None) -> None:
                    seen.append(progress)
                    if len(seen) == 2:  # it is running on the server: cancel it now
                        scope.cancel()

                await client.call_tool("trigger-long-running-operation",
                                       {"duration": 2, "steps": 8},
                                       progress_callback=on_progress)
            echoed = await client.call_tool("echo", {"message": "still here"})
            await anyio.sleep(2.5)  # the operation's time is up: a late answer would be in
            again = await client.call_tool("echo", {"message": "and again"})
        return scope.cancelled_caught, seen, echoed, again

    cancelled, seen, echoed, again = run(main)
    assert cancelled
    assert seen[:2] == [1, 2]  # progress came while it ran (a late note may follow)
    assert text(echoed) == "Echo: still here" and not echoed.is_error
    assert text(again) == "Echo: and again"
    assert site.requests() == []
    messages = wire_messages(wire)
    [(_, call)] = [(d, m) for d, m in messages if d == "C" and m.get("method") == "tools/call"
                   and m["params"]["name"] == "trigger-long-running-operation"]
    cancels = [m for d, m in messages if d == "C" and m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for m in cancels] == [call["id"]]  # the server was told
    assert not [m for d, m in messages if d == "S" and m.get("id") == call["id"]]  # and stopped


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
def test_everything_logging_level_and_messages_pass_through(bins: Path, ev_site: Site) -> None:
    site = ev_site

    async def logging(client: Any, messages: list[Any]) -> dict[str, Any]:
        level = dump(await client.set_logging_level("debug"))
        toggled = dump(await client.call_tool("toggle-simulated-logging", {}))
        await anyio.to_thread.run_sync(lambda: wait_for(lambda: messages, timeout=10,
                                                        what="a log message"))
        await client.call_tool("toggle-simulated-logging", {})  # off again
        return {"level": level, "toggled": toggled}

    async def main() -> tuple[Any, Any, list[Any]]:
        plain_logs: list[Any] = []
        proxied_logs: list[Any] = []

        async def keep_plain(params: types.LoggingMessageNotificationParams) -> None:
            plain_logs.append(params)

        async def keep_proxied(params: types.LoggingMessageNotificationParams) -> None:
            proxied_logs.append(params)

        async with direct(site, upstream=everything(bins), mode="legacy",
                          logging_callback=keep_plain) as plain:
            baseline = await logging(plain, plain_logs)
        async with proxied(site, upstream=everything(bins), mode="legacy",
                           logging_callback=keep_proxied) as client:
            through = await logging(client, proxied_logs)
        return baseline, through, proxied_logs

    baseline, through, logs = run(main)
    assert through == baseline
    assert logs and all(isinstance(m.data, str) and "message" in m.data for m in logs)
