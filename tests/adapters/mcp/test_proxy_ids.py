"""Whose answer counts, and whose hints: the proxy against a hostile server and a careless
client, both speaking JSON-RPC with ids of their own choosing.

The hostile server is ``raw_upstream.py`` (raw JSON-RPC over stdio, no SDK); the
client is the official ``mcp`` client, or raw JSON lines where it must misbehave
(a reused request id). The proxy is a real ``signoff mcp-proxy`` process; its
database is SQLite or PostgreSQL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcpkit import (
    EXE,
    HERE,
    Site,
    make_site,
    pending,
    proxied,
    proxy_args,
    run,
    signoff_meta,
    text,
    wait_for,
)

from signoff.model import RequestStatus

pytestmark = pytest.mark.slow
RAW = [sys.executable, str(HERE / "raw_upstream.py")]
QUESTION = "use your approximate location?"


@pytest.fixture(params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Site]:
    plain = make_site(tmp_path)
    if request.param == "sqlite":
        yield plain
        return
    sys.path.insert(0, str(Path(__file__).parents[2] / "server"))
    from procs import database, signoff

    with database("postgres", tmp_path) as url:
        signoff("db", "migrate", "--db", url, cwd=tmp_path)
        yield dataclasses.replace(plain, url=url)


def received(site: Site) -> list[dict[str, Any]]:
    return [json.loads(line) for line in site.event_lines()]


def test_a_servers_own_question_never_approves_a_waiting_call(site: Site, monkeypatch:
                                                              pytest.MonkeyPatch) -> None:
    # The server learns the id of the proxy's own tools/list and asks the client its own
    # question under that id, its successors and small integers, while `wipe` (destructive:
    # asked) waits for the person. The person accepts the server's question and dismisses
    # the approval dialog: the call must not run, nor be approved.
    monkeypatch.setenv("RAW_ASK", "1")
    seen: list[str] = []

    async def person(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        if params.message == QUESTION:
            await anyio.sleep(1.0)  # by now the proxy's own dialog is out too
            return types.ElicitResult(action="accept", content={})
        await anyio.sleep(30)  # the approval dialog: never answered here
        return types.ElicitResult(action="cancel")

    async def main() -> types.CallToolResult:
        async with proxied(site, upstream=RAW, mode="legacy", wait=4,
                           elicitation_callback=person) as client:
            return await client.call_tool("wipe", {"text": "everything"})

    result = run(main)
    assert signoff_meta(result)["outcome"] == "pending", text(result)
    assert site.ledger_lines() == []  # never reached the server
    [request] = site.requests()
    assert request.status is RequestStatus.PENDING
    gate = site.gate()
    try:
        assert gate.store.decisions(request.id) == []
    finally:
        gate.close()
    questions = [m for m in seen if m == QUESTION]
    assert len(questions) >= 5 and any(m.startswith("signoff: approve") for m in seen)
    # Each of the server's questions reached the person under an id of the proxy's, and
    # each answer went back to the server under the id the server chose.
    events = received(site)
    own_list = next(e["id"] for e in events if e.get("method") == "tools/list"
                    and isinstance(e.get("id"), str))
    answers = {json.dumps(e["id"]): e["result"]["action"] for e in events
               if "result" in e and "method" not in e}
    sys.path.insert(0, str(HERE))
    from raw_upstream import guesses

    assert answers == {json.dumps(g): "accept" for g in guesses(own_list)}


def test_the_proxys_own_ids_are_unpredictable_per_direction(site: Site) -> None:
    # Two sessions' own tools/list ids: a random prefix and a random part, nothing a
    # server could count on.
    ids: list[str] = []
    for _ in range(2):
        async def main() -> None:
            async with proxied(site, "--no-elicit", upstream=RAW, mode="legacy",
                               wait=0.5) as client:
                await client.call_tool("calm", {"text": "x"})

        run(main)
        ids += [e["id"] for e in received(site) if e.get("method") == "tools/list"
                and isinstance(e.get("id"), str)]
        site.events.unlink()
    assert len(ids) >= 2 and len(set(ids)) == len(ids)
    prefixes = {i.rsplit("-", 1)[0] for i in ids}
    assert len(prefixes) == 2  # a prefix per session (and direction), a fresh part per id
    assert all(len(i.rsplit("-", 1)[1]) >= 16 and not i.rsplit("-", 1)[1].isdigit()
               for i in ids)


@pytest.mark.parametrize("tool", ["dup", "dup2"])
def test_a_tool_listed_twice_keeps_its_destructive_hint(site: Site, tool: str) -> None:
    # `dup` is listed destructive and then not, on one page; `dup2` on the next page.
    async def main() -> types.CallToolResult:
        async with proxied(site, "--no-elicit", upstream=RAW, mode="legacy",
                           wait=0.5) as client:
            return await client.call_tool(tool, {"text": "x"})

    result = run(main)
    assert signoff_meta(result)["outcome"] == "pending", text(result)
    assert site.ledger_lines() == []
    [request] = site.requests()
    assert request.tool == f"t__{tool}"
    assert any(r.get("code") == "mcp_hint" for r in request.reasons)


@contextlib.contextmanager
def raw_client(site: Site, *extra: str) -> Iterator[subprocess.Popen[str]]:
    args = [str(EXE), *proxy_args(site, *extra, wait=30), "--", *RAW]
    proc = subprocess.Popen(args, cwd=site.dir, env=site.env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _send(proc: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    proc.stdin.flush()


def _read_until(proc: subprocess.Popen[str], predicate: Any) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the proxy closed its output"
        message = json.loads(line)
        if predicate(message):
            return dict(message)


def test_a_reused_client_id_never_detaches_a_waiting_call(site: Site) -> None:
    with raw_client(site, "--no-elicit") as proc:
        _send(proc, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        _read_until(proc, lambda m: m.get("id") == 1)
        _send(proc, {"method": "notifications/initialized"})
        _send(proc, {"id": 7, "method": "tools/call",
                     "params": {"name": "wipe", "arguments": {"text": "all"}}})
        [request] = wait_for(lambda: pending(site), what="the wipe request")
        # The same id again, for an allowed call: refused while the first is in flight.
        _send(proc, {"id": 7, "method": "tools/call",
                     "params": {"name": "calm", "arguments": {"text": "x"}}})
        refused = _read_until(proc, lambda m: m.get("id") == 7)
        assert refused["error"]["code"] == -32600, refused
        # The first call's cancellation still withdraws its request.
        _send(proc, {"method": "notifications/cancelled",
                     "params": {"requestId": 7, "reason": "changed my mind"}})
        gate = site.gate()
        try:
            wait_for(lambda: gate.get_request(request.id).status is RequestStatus.CANCELLED,
                     what="the request to be withdrawn")
        finally:
            gate.close()
        # And the id is free again once nothing uses it.
        _send(proc, {"id": 7, "method": "tools/call",
                     "params": {"name": "calm", "arguments": {"text": "y"}}})
        answer = _read_until(proc, lambda m: m.get("id") == 7)
        assert answer["result"]["content"][0]["text"] == "ran calm"
    assert site.ledger_lines() == ["call:calm"]


def test_a_response_to_nothing_is_dropped(site: Site) -> None:
    # A client answering a request nobody sent (an id the server might use next) reaches
    # no one; the session goes on.
    with raw_client(site, "--no-elicit") as proc:
        _send(proc, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        _read_until(proc, lambda m: m.get("id") == 1)
        _send(proc, {"method": "notifications/initialized"})
        for rid in (1, 2, "signoff-x-1"):
            _send(proc, {"id": rid, "result": {"action": "accept", "content": {}}})
        _send(proc, {"id": 2, "method": "ping"})
        assert _read_until(proc, lambda m: m.get("id") == 2)["result"] == {}
        time.sleep(0.2)
    assert not [e for e in received(site) if "result" in e and "method" not in e]
