"""``signoff mcp-proxy`` over streamable HTTP: serving clients (``--listen``) and reaching
a remote server (``--upstream URL``). Real processes, the official client, the SDK's
own streamable-HTTP server as the upstream."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcpkit import (
    EXE,
    HERE,
    UPSTREAM,
    Site,
    answering,
    direct,
    dump,
    free_port,
    make_site,
    pending,
    process,
    proxied,
    proxy_args,
    text,
    wait_for,
    wait_http,
)
from mcpkit import (
    signoff_meta as meta,
)

from signoff import Decision
from signoff.model import RequestStatus

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path, extra='[[rules]]\nid = "slow-ok"\neffect = "allow"\n'
                     'tool = "t__slow"\n[[rules]]\nid = "die-ok"\neffect = "allow"\n'
                     'tool = "t__die"\nargs = { text = "allowed*" }\n')


@contextlib.contextmanager
def listening(site: Site, *extra: str, upstream: list[str] | None = None) -> Iterator[str]:
    """``signoff mcp-proxy --listen`` with a child-process upstream; yields its URL."""
    port = free_port()
    args = [str(EXE), *proxy_args(site, *extra), "--listen", f"127.0.0.1:{port}", "--json",
            "--", *(upstream or UPSTREAM)]
    with process(args, cwd=site.dir, env=site.env()) as proc:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        yield f"http://127.0.0.1:{port}/mcp"


@contextlib.contextmanager
def http_upstream(site: Site) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """The SDK's streamable-HTTP server running ``upstream.py``."""
    port = free_port()
    with process([sys.executable, str(HERE / "upstream.py"), "http", str(port)],
                 cwd=site.dir, env=site.env()) as proc:
        wait_http(f"http://127.0.0.1:{port}/mcp", proc)
        yield f"http://127.0.0.1:{port}/mcp", proc


def _approve_when_asked(site: Site, decision: Decision) -> None:
    [request] = wait_for(lambda: pending(site), what="a pending request")
    gate = site.gate()
    try:
        identity, _ = gate.add_user("ann")
        gate.decide(request.id, decision, identity=identity)
    finally:
        gate.close()


# ---- --listen ----------------------------------------------------------------------------------


def test_listen_serves_the_same_lists_and_gates_calls(site: Site) -> None:
    async def main() -> dict[str, Any]:
        async with direct(site, mode="legacy") as plain:
            tools = [dump(await plain.list_tools(cursor=c)) for c in (None, "3", "6")]
            prompt = dump(await plain.get_prompt("greet", {"who": "bo"}))
        with listening(site) as url:
            async with Client(url, mode="legacy", elicitation_callback=answering("accept")) as c:
                through = [dump(await c.list_tools(cursor=cur)) for cur in (None, "3", "6")]
                through_prompt = dump(await c.get_prompt("greet", {"who": "bo"}))
                peeked = await c.call_tool("peek", {"name": "h"})
                noted = await c.call_tool("note", {"text": "over http"})
        assert through == tools and through_prompt == prompt
        return {"peeked": text(peeked), "noted": text(noted)}

    out = anyio.run(main)
    assert out == {"peeked": "peeked h", "noted": "noted over http"}
    assert site.ledger_lines() == ["note:over http"]
    [request] = site.requests()
    assert request.status is RequestStatus.SUCCEEDED and request.thread_id.startswith("mcp-")


def test_listen_sessions_are_separate_threads_and_the_inbox_decides(site: Site) -> None:
    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        with listening(site, "--no-elicit") as url:
            async with Client(url, mode="legacy") as first, \
                    Client(url, mode="legacy") as second:
                one = await first.call_tool("peek", {"name": "one"})
                async with anyio.create_task_group() as tg:
                    tg.start_soon(anyio.to_thread.run_sync, _approve_when_asked, site,
                                  Decision.approve())
                    two = await second.call_tool("note", {"text": "second session"})
        return one, two

    one, two = anyio.run(main)
    assert text(one) == "peeked one" and text(two) == "noted second session"
    gate = site.gate()
    try:
        gate.flush()
        threads = {json.loads(e.data).get("thread_id") for e in gate.store.audit_events()
                   if e.kind in ("call.allowed", "request.created")}
    finally:
        gate.close()
    assert len(threads) == 2 and all(t.startswith("mcp-") for t in threads)


def test_listen_refuses_an_unknown_session(site: Site) -> None:
    import httpx

    with listening(site) as url:
        answer = httpx.post(url, headers={"Mcp-Session-Id": "nope",
                                          "Accept": "application/json, text/event-stream"},
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answer.status_code == 404


# ---- --upstream URL ------------------------------------------------------------------------------


def test_upstream_url_relays_and_gates(site: Site) -> None:
    with http_upstream(site) as (url, _proc):
        async def main() -> dict[str, Any]:
            async with proxied(site, "--upstream", url, mode="legacy",
                               elicitation_callback=answering("decline")) as client:
                listed = await client.list_tools()
                read = dump(await client.read_resource("mem://greeting"))
                peeked = await client.call_tool("peek", {"name": "remote"})
                declined = await client.call_tool("note", {"text": "no"})
                progress: list[float] = []

                async def on_progress(value: float, _total: Any, _msg: Any) -> None:
                    progress.append(value)

                await client.call_tool("slow", {"steps": 2, "delay": 0.05},
                                       progress_callback=on_progress)
            return {"tools": [t.name for t in listed.tools], "read": read,
                    "peeked": text(peeked), "declined": meta(declined)["outcome"],
                    "progress": progress}

        out = anyio.run(main)
    assert out["tools"] == ["peek", "note", "slow"]
    assert out["read"]["contents"][0]["text"] == "hello from upstream\u00e9"
    assert out["peeked"] == "peeked remote"
    assert out["declined"] == "rejected"
    assert out["progress"] == [1, 2]
    assert site.ledger_lines() == []


def test_a_remote_server_dying_mid_call_leaves_an_approved_call_unknown(site: Site) -> None:
    with http_upstream(site) as (url, proc):
        async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
            async with proxied(site, "--upstream", url, mode="legacy", wait=10,
                               elicitation_callback=answering("accept")) as client:
                lost = await client.call_tool("die", {"text": "approved"})
                return lost, lost

        lost, _ = anyio.run(main)
        proc.wait(10)
    [request] = site.requests()
    assert lost.is_error and meta(lost)["code"] == "outcome_unknown"
    assert request.status is RequestStatus.UNKNOWN
    assert site.ledger_lines() == ["die:approved"]


def test_the_command_line_refuses_bad_setups(site: Site) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(EXE), "mcp-proxy", "--policy", str(site.policy), "--db",
                               str(site.db), *args], capture_output=True, text=True,
                              timeout=30, check=False, cwd=site.dir)

    cases: list[tuple[tuple[str, ...], str]] = [
        ((), "no_upstream"),
        (("--upstream", "http://x/mcp", "--", "cmd"), "no_upstream"),
        (("--upstream", "ftp://x"), "invalid_upstream"),
        (("--wait", "0", "--", "cmd"), "invalid_wait"),
        (("--mode", "turbo", "--", "cmd"), "invalid_mode"),
        (("--interaction", "sometimes", "--", "cmd"), "unknown_interaction_mode"),
        (("--approver", "bad name!", "--", "cmd"), "invalid_name"),
        (("--listen", "nowhere", "--", "cmd"), "invalid_listen")]
    for args, code in cases:
        done = run(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert code in done.stderr, (args, done.stderr)
    assert site.requests() == []


def test_the_default_client_opens_one_session_and_leaves_none_behind(site: Site) -> None:
    # mode="auto" first probes server/discover without a session: answered 400 (only an
    # initialize opens a session, each with its own upstream process), so it falls back.
    import httpx

    with listening(site) as url:
        health = url.removesuffix("/mcp") + "/healthz"

        async def main() -> tuple[str, int]:
            async with Client(url) as client:
                peeked = text(await client.call_tool("peek", {"name": "auto"}))
                during = httpx.get(health).json()["sessions"]
            return peeked, during

        peeked, during = anyio.run(main)
        after = wait_for(lambda: httpx.get(health).json()["sessions"] == 0 or None,
                         what="the session to end")
    assert peeked == "peeked auto"
    assert during == 1 and after
