"""``signoff mcp-proxy`` between the official client and an SDK server, the client on stdio
and (``via``) on streamable HTTP.

The upstream is ``upstream.py`` (the official SDK's low-level server): a paged
tool list, a ledger tool, a slow tool with progress, a tool that kills its own
process, a tool that asks the client back. Every test runs the proxy as a real
process and talks to it with the real ``mcp`` client.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError
from mcpkit import (
    EXE,
    UPSTREAM,
    Site,
    direct,
    dump,
    make_site,
    pending,
    proxied,
    proxy_args,
    run,
    signoff_meta,
    text,
    wait_for,
)
from mcpkit import (
    answering as accept,
)

from signoff import Decision
from signoff.model import RequestStatus

pytestmark = pytest.mark.slow


@pytest.fixture(params=["stdio", "http"])
def via(request: pytest.FixtureRequest) -> str:
    """How the client reaches the proxy: stdio, or streamable HTTP (--listen)."""
    return str(request.param)


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path, extra='[[rules]]\nid = "slow-ok"\neffect = "allow"\n'
                     'tool = "t__slow"\n[[rules]]\nid = "confirm-ok"\neffect = "allow"\n'
                     'tool = "t__confirm"\n')


# ---- passthrough --------------------------------------------------------------------------------


def test_lists_pages_resources_prompts_and_ping_pass_through_untouched(site: Site,
                                                                       via: str) -> None:
    async def walk(client: Any) -> dict[str, Any]:
        pages, cursor = [], None
        while True:
            page = await client.list_tools(cursor=cursor)
            pages.append(dump(page))
            cursor = page.next_cursor
            if not cursor:
                break
        return {
            "init": dump(client.session.initialize_result.capabilities),
            "server": dump(client.session.initialize_result.server_info),
            "pages": pages,
            "resources": dump(await client.list_resources()),
            "read": dump(await client.read_resource("mem://greeting")),
            "prompts": dump(await client.list_prompts()),
            "prompt": dump(await client.get_prompt("greet", {"who": "ann"})),
            "ping": dump(await client.session.send_ping()),
        }

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with direct(site, mode="legacy") as plain:
            baseline = await walk(plain)
        async with proxied(site, via=via, mode="legacy") as client:
            through = await walk(client)
        return baseline, through

    baseline, through = run(main)
    assert through == baseline
    assert len(through["pages"]) == 3  # 8 tools, 3 a page: the cursors went through
    assert through["read"]["contents"][0]["text"] == "hello from upstream\u00e9"
    assert site.requests() == []


def test_a_modern_client_and_server_talk_through_the_proxy(site: Site) -> None:
    # mode="auto" probes server/discover: this SDK server answers it, so the session is
    # 2026-07-28 (no initialize; capabilities ride in each request's _meta). Its asks are
    # put to the user as an InputRequiredResult, which the client answers and retries.
    callback = accept()

    async def main() -> tuple[Any, str, types.CallToolResult, types.CallToolResult]:
        async with proxied(site, elicitation_callback=callback) as client:
            peeked = await client.call_tool("peek", {"name": "x"})
            noted = await client.call_tool("note", {"text": "modern"})
            async with proxied(site, "--interaction", "autonomous") as unattended:
                blocked = await unattended.call_tool("note", {"text": "nobody"})
            return client.session.discover_result, text(peeked), noted, blocked

    discovered, peeked, noted, blocked = run(main)
    assert blocked.is_error and signoff_meta(blocked)["outcome"] == "blocked"
    assert discovered is not None and "2026-07-28" in discovered.supported_versions
    assert peeked == "peeked x"
    assert text(noted) == "noted modern"
    [question] = callback.seen
    [request] = site.requests()
    assert request.id in question and request.status is RequestStatus.SUCCEEDED
    assert site.ledger_lines() == ["note:modern"]


# ---- verdicts -----------------------------------------------------------------------------------


def test_allowed_denied_and_blocked_calls(tmp_path: Path, via: str) -> None:
    site = make_site(tmp_path, extra='[[rules]]\nid = "no-peek-secret"\neffect = "deny"\n'
                     'tool = "t__peek"\nargs = { name = "secret*" }\nreason = "secrets stay put"\n')

    async def main() -> list[types.CallToolResult]:
        async with proxied(site, via=via, mode="legacy") as client:
            allowed = await client.call_tool("peek", {"name": "plain"})
            denied = await client.call_tool("peek", {"name": "secret-key"})
        async with proxied(site, "--interaction", "scheduled", via=via, mode="legacy") as client:
            blocked = await client.call_tool("note", {"text": "unattended"})
        return [allowed, denied, blocked]

    allowed, denied, blocked = run(main)
    assert not allowed.is_error and text(allowed) == "peeked plain"
    assert denied.is_error and "secrets stay put" in text(denied)
    assert signoff_meta(denied) == {"outcome": "denied", "code": "rule_deny"}
    assert blocked.is_error and signoff_meta(blocked)["outcome"] == "blocked"
    assert site.ledger_lines() == []  # neither refused call reached the server
    gate = site.gate()
    try:
        gate.flush()
        kinds = [e.kind for e in gate.store.audit_events()]
    finally:
        gate.close()
    assert "call.allowed" in kinds and "call.denied" in kinds and "call.blocked" in kinds
    assert "call.result" in kinds  # the allowed call's result, by hash


def test_destructive_hints_ask_even_unlisted_and_read_only_lies_change_nothing(
        site: Site) -> None:
    # unknown_tools = "allow": without hints every t__ tool would run. `note` is marked
    # destructive (asked), `liar` claims read-only (allowed, as without any hint).
    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with proxied(site, "--no-elicit", mode="legacy", wait=1) as client:
            noted = await client.call_tool("note", {"text": "a"})  # never listed by the client
            lied = await client.call_tool("liar", {"text": "b"})
            return noted, lied

    noted, lied = run(main)
    assert noted.is_error and signoff_meta(noted)["outcome"] == "pending"
    [request] = site.requests()
    assert request.tool == "t__note" and request.risk.value == "high"
    assert any(r.get("code") == "mcp_hint" for r in request.reasons)
    assert not lied.is_error
    assert site.ledger_lines() == ["liar:b"]


def test_a_tool_list_change_reaches_the_client_and_the_hints_are_read_again(
        site: Site, via: str) -> None:
    notes: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            notes.append(message.method)

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with proxied(site, "--no-elicit", via=via, mode="legacy", wait=1,
                           message_handler=on_message) as client:
            before = await client.call_tool("note", {"text": "before"})
            await client.call_tool("shuffle", {})
            await anyio.to_thread.run_sync(lambda: wait_for(lambda: notes))
            after = await client.call_tool("note", {"text": "after"})  # read again
            return before, after

    before, after = run(main)
    assert notes == ["notifications/tools/list_changed"]
    assert signoff_meta(before)["outcome"] == "pending"  # destructive: asked
    # No longer marked destructive — but its definition changed mid-session: asked anew
    # (tests/adapters/mcp/test_proxy_definitions.py), not let through on the gentler hints.
    assert signoff_meta(after)["outcome"] == "pending"
    changed = request_named(site, signoff_meta(after)["request_id"])
    assert [r["code"] for r in changed.reasons] == ["definition_changed"]
    assert site.ledger_lines() == []


def request_named(site: Site, request_id: str) -> Any:
    return next(r for r in site.requests() if r.id == request_id)


# ---- asks: elicitation --------------------------------------------------------------------------


def test_an_elicitation_never_approves_a_call_that_needs_a_passkey(tmp_path: Path) -> None:
    """A dialog in the MCP client cannot produce a passkey assertion: the client is not asked
    at all, nothing runs, and the call waits for the inbox, saying where."""
    site = make_site(tmp_path, extra='[[rules]]\nid = "signed-note"\neffect = "ask"\n'
                     'tool = "t__note"\nsignature = "passkey"\n')
    callback = accept("accept")

    async def main() -> types.CallToolResult:
        async with proxied(site, mode="legacy", wait=2, elicitation_callback=callback) as c:
            return await c.call_tool("note", {"text": "hello"})

    result = run(main)
    [request] = site.requests()
    assert callback.seen == []  # not elicited: its "accept" could not count
    assert request.passkey and request.status is RequestStatus.PENDING
    assert result.is_error and signoff_meta(result)["outcome"] == "pending"
    assert "http://inbox.test/requests/" + request.id in text(result)
    assert site.ledger_lines() == []
    gate = site.gate()
    try:
        assert gate.decisions(request.id) == []
    finally:
        gate.close()


@pytest.mark.parametrize("answer", ["accept", "decline", "cancel"])
def test_an_ask_answered_by_elicitation(site: Site, answer: str, via: str) -> None:
    callback = accept(answer)

    async def main() -> types.CallToolResult:
        async with proxied(site, via=via, mode="legacy", wait=2,
                           elicitation_callback=callback) as c:
            return await c.call_tool("note", {"text": "hello"})

    result = run(main)
    [request] = site.requests()
    [question] = callback.seen
    assert request.id in question and '{"text":"hello"}' in question and "t__note" in question
    assert "risk: high" in question
    if answer == "accept":
        assert not result.is_error and text(result) == "noted hello"
        assert site.ledger_lines() == ["note:hello"]
        assert request.status is RequestStatus.SUCCEEDED
        gate = site.gate()
        try:
            [decision] = gate.store.decisions(request.id)
            events = list(gate.store.audit_events())
        finally:
            gate.close()
        assert decision.approver.startswith("local:")
        recorded = [e for e in events if e.kind == "decision.recorded"]
        assert recorded and json.loads(recorded[0].data).get("via") == "mcp-elicitation"
    elif answer == "decline":
        assert result.is_error and "rejected" in text(result)
        assert request.status is RequestStatus.REJECTED
        assert site.ledger_lines() == []
    else:  # dismissed: no decision; the call waited for the inbox and said so
        assert result.is_error and signoff_meta(result) == {
            "outcome": "pending", "code": "pending", "request_id": request.id}
        assert "http://inbox.test/requests/" + request.id in text(result)
        assert request.status is RequestStatus.PENDING
        assert site.ledger_lines() == []


def test_a_repeated_call_joins_its_pending_request_and_runs_once_approved(site: Site) -> None:
    async def main() -> list[types.CallToolResult]:
        async with proxied(site, "--no-elicit", mode="legacy", wait=1) as client:
            first = await client.call_tool("note", {"text": "again"})
            second = await client.call_tool("note", {"text": "again"})
            [request] = pending(site)
            gate = site.gate()
            try:
                identity, _ = gate.add_user("ann")
                gate.decide(request.id, Decision.approve(), identity=identity)
            finally:
                gate.close()
            third = await client.call_tool("note", {"text": "again"})
            fourth = await client.call_tool("note", {"text": "again"})
            return [first, second, third, fourth]

    first, second, third, fourth = run(main)
    ids = {signoff_meta(first)["request_id"], signoff_meta(second)["request_id"]}
    assert len(ids) == 1  # the retry joined the first request
    assert text(third) == "noted again"
    # Ran once; a later identical call is a new call (asked anew).
    assert signoff_meta(fourth)["outcome"] == "pending"
    assert site.ledger_lines() == ["note:again"]
    assert len(site.requests()) == 2


def test_roles_and_quorum_the_local_approver_cannot_meet_stay_in_the_inbox(
        tmp_path: Path) -> None:
    site = make_site(tmp_path, extra='[[rules]]\nid = "two"\neffect = "ask"\ntool = "t__note"\n'
                     'args = { text = "two*" }\napprovals = 2\n[[rules]]\nid = "sec"\n'
                     'effect = "ask"\ntool = "t__note"\nroles = ["security"]\n')
    callback = accept()

    async def main() -> list[types.CallToolResult]:
        async with proxied(site, mode="legacy", wait=1, elicitation_callback=callback) as c:
            out = [await c.call_tool("note", {"text": "two-people"}),
                   await c.call_tool("note", {"text": "needs-security"})]
        async with proxied(site, "--approver", "sec-officer", "--approver-roles", "security",
                           mode="legacy", wait=5, elicitation_callback=callback) as c:
            out.append(await c.call_tool("note", {"text": "with-role"}))
        return out

    two, sec, with_role = run(main)
    assert signoff_meta(two)["outcome"] == "pending"
    assert signoff_meta(sec)["outcome"] == "pending"
    assert len(callback.seen) == 1  # only the approver holding the role was asked
    assert text(with_role) == "noted with-role"
    assert site.ledger_lines() == ["note:with-role"]


# ---- the inbox decides --------------------------------------------------------------------------


def _decide_when_asked(site: Site, decision: Decision,
                       after: threading.Event | None = None) -> threading.Thread:
    def decide() -> None:
        [request] = wait_for(lambda: pending(site), what="a pending request")
        if after is not None:
            assert after.wait(20), "the dialog never opened"
        gate = site.gate()
        try:
            identity, _ = gate.add_user("ann")
            gate.decide(request.id, decision, identity=identity)
        finally:
            gate.close()

    thread = threading.Thread(target=decide, daemon=True)
    thread.start()
    return thread


def test_an_inbox_decision_beats_an_open_elicitation(site: Site, via: str) -> None:
    opened = threading.Event()

    async def never(_ctx: Any, _params: Any) -> types.ElicitResult:
        opened.set()
        await anyio.sleep(60)  # the person never answers the dialog
        return types.ElicitResult(action="cancel")

    async def main() -> types.CallToolResult:
        thread = _decide_when_asked(site, Decision.approve(), after=opened)  # dialog open
        async with proxied(site, via=via, mode="legacy", wait=30, elicitation_callback=never) as c:
            result = await c.call_tool("note", {"text": "inbox wins"})
        thread.join(10)
        return result

    result = run(main)
    assert opened.is_set()
    assert text(result) == "noted inbox wins"
    assert site.ledger_lines() == ["note:inbox wins"]


def test_parallel_calls_do_not_wait_for_an_asked_one(site: Site, via: str) -> None:
    async def main() -> tuple[list[str], str]:
        done: list[str] = []
        async with proxied(site, "--no-elicit", via=via, mode="legacy", wait=30) as client:
            async def asked() -> None:
                done.append("note:" + text(await client.call_tool("note", {"text": "later"})))

            async def quick(i: int) -> None:
                done.append(text(await client.call_tool("peek", {"name": str(i)})))

            async with anyio.create_task_group() as tg:
                tg.start_soon(asked)
                await anyio.to_thread.run_sync(lambda: wait_for(lambda: pending(site)))
                async with anyio.create_task_group() as quick_group:
                    for i in range(6):
                        quick_group.start_soon(quick, i)
                snapshot = list(done)
                _decide_when_asked(site, Decision.approve())
        return snapshot, done[-1]

    before_approval, last = run(main)
    assert sorted(before_approval) == sorted(f"peeked {i}" for i in range(6))
    assert last == "note:noted later"
    assert site.ledger_lines() == ["note:later"]


def test_an_edit_runs_the_edited_arguments(site: Site, via: str) -> None:
    async def main() -> types.CallToolResult:
        thread = _decide_when_asked(site, Decision.edit({"text": "edited"}, reason="nicer"))
        async with proxied(site, "--no-elicit", via=via, mode="legacy", wait=30) as client:
            result = await client.call_tool("note", {"text": "original"})
        thread.join(10)
        return result

    result = run(main)
    assert text(result) == "noted edited"
    assert site.ledger_lines() == ["note:edited"]


# ---- progress, cancellation, the server's own requests ------------------------------------------


def test_progress_is_forwarded_and_a_waiting_call_reports_its_own(site: Site, via: str) -> None:
    async def main() -> tuple[list[Any], list[Any]]:
        upstream: list[Any] = []
        waiting: list[Any] = []

        async def on_upstream(progress: float, total: float | None, message: str | None) -> None:
            upstream.append((progress, total, message))

        async def on_waiting(progress: float, total: float | None, message: str | None) -> None:
            waiting.append(message)

        async with proxied(site, "--no-elicit", via=via, mode="legacy", wait=1.5) as client:
            await client.call_tool("slow", {"steps": 3, "delay": 0.05},
                                   progress_callback=on_upstream)
            await client.call_tool("note", {"text": "w"}, progress_callback=on_waiting)
        return upstream, waiting

    upstream, waiting = run(main)
    assert upstream == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert waiting and all("waiting for a human to approve request" in m for m in waiting)


def test_cancellation_reaches_the_server_and_withdraws_a_waiting_ask(site: Site, via: str) -> None:
    async def main() -> None:
        async with proxied(site, "--no-elicit", via=via, mode="legacy", wait=30) as client:
            with anyio.move_on_after(1.0):
                await client.call_tool("slow", {"steps": 100, "delay": 0.1})
            await anyio.to_thread.run_sync(lambda: wait_for(
                lambda: any(e.startswith("slow-cancelled") for e in site.event_lines()),
                what="the server to see the cancellation"))
            with anyio.move_on_after(1.5):
                await client.call_tool("note", {"text": "never mind"})
            await anyio.to_thread.run_sync(lambda: wait_for(
                lambda: [r for r in site.requests() if r.status is RequestStatus.CANCELLED],
                what="the request withdrawn"))
            still = await client.call_tool("peek", {"name": "after"})
            assert text(still) == "peeked after"

    run(main)
    assert not any(e.startswith("slow-done") for e in site.event_lines())
    [request] = site.requests()
    assert request.status is RequestStatus.CANCELLED
    assert site.ledger_lines() == []
    gate = site.gate()
    try:
        results = [json.loads(e.data) for e in gate.store.audit_events()
                   if e.kind == "call.result"]
    finally:
        gate.close()
    slow = [r for r in results if r["tool"] == "t__slow"]
    assert slow and slow[0]["outcome"] == "unknown" and slow[0]["cancelled"] is True


def test_the_servers_own_elicitation_passes_through(site: Site, via: str) -> None:
    asked: list[str] = []

    async def answer(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async def main() -> types.CallToolResult:
        async with proxied(site, via=via, mode="legacy", elicitation_callback=answer) as client:
            return await client.call_tool("confirm", {"question": "upstream asks: ok?"})

    result = run(main)
    assert asked == ["upstream asks: ok?"]
    assert text(result) == "upstream heard accept {'ok': True}"


def test_a_tool_error_and_a_protocol_error_come_back_as_the_server_sent_them(site: Site) -> None:
    async def errors(client: Any) -> tuple[dict[str, Any], str]:
        failed = dump(await client.call_tool("fail", {}))
        try:
            await client.call_tool("nope", {})
        except MCPError as exc:
            return failed, f"{exc.error.code} {exc.error.message}"
        raise AssertionError("an unknown tool was answered")

    async def main() -> tuple[Any, Any]:
        async with direct(site, mode="legacy") as plain:
            baseline = await errors(plain)
        async with proxied(site, mode="legacy") as client:
            through = await errors(client)
        return baseline, through

    baseline, through = run(main)
    assert through == baseline
    assert through[0]["isError"] is True and "no tool nope" in through[1]


# ---- the server dies, the client leaves ---------------------------------------------------------


def test_an_approved_call_whose_server_dies_mid_call_is_unknown_never_retried(
        site: Site, via: str) -> None:
    async def main() -> types.CallToolResult:
        async with proxied(site, via=via, mode="legacy", wait=10,
                           elicitation_callback=accept()) as c:
            return await c.call_tool("die", {"text": "boom"})

    result = run(main)
    [request] = site.requests()
    assert result.is_error and signoff_meta(result) == {
        "outcome": "error", "code": "outcome_unknown", "request_id": request.id}
    assert "may or may not have happened" in text(result)
    assert request.status is RequestStatus.UNKNOWN
    assert site.ledger_lines() == ["die:boom"]  # it ran once, and only once


def test_an_allowed_call_whose_server_dies_is_reported_unknown(tmp_path: Path) -> None:
    site = make_site(tmp_path, extra='[[rules]]\nid = "die-ok"\neffect = "allow"\n'
                     'tool = "t__die"\n')

    async def main() -> types.CallToolResult:
        async with proxied(site, mode="legacy") as client:
            return await client.call_tool("die", {"text": "allowed"})

    result = run(main)
    assert result.is_error and signoff_meta(result)["code"] == "outcome_unknown"
    assert site.ledger_lines() == ["die:allowed"]
    assert site.requests() == []


def test_a_client_gone_while_waiting_leaves_the_request_to_expire_and_nothing_runs(
        tmp_path: Path) -> None:
    # A client that goes away without cancelling (its process ended: stdin closes). The
    # official client would cancel the call first, which withdraws the request instead.
    site = make_site(tmp_path, expires="3s")
    args = [str(EXE), *proxy_args(site, "--no-elicit", wait=60), "--", *UPSTREAM]
    proc = subprocess.Popen(args, cwd=site.dir, env=site.env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for line in (
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "note", "arguments": {"text": "abandoned"}}}):
            proc.stdin.write(json.dumps(line) + "\n")
            proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        [request] = wait_for(lambda: pending(site), what="the request")
        proc.stdin.close()  # the client is gone
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
    assert site.gate().store.get_request(request.id).status is RequestStatus.PENDING  # type: ignore[union-attr]
    gate = site.gate()
    try:
        outcome = wait_for(lambda: (o := gate.outcome(request.id)).kind.value == "expired"
                           and o, timeout=10, what="the request to expire")
    finally:
        gate.close()
    assert outcome.kind.value == "expired"
    assert site.ledger_lines() == []


def test_a_client_cannot_pass_an_answer_off_as_the_proxys_own(tmp_path: Path) -> None:
    # The proxy lists the tools itself before the first call to an unlisted tool. A client
    # that sends requests under ids like the proxy's must not get a resources list taken
    # for that tool list (which would lose the destructive hint of `note`).
    site = make_site(tmp_path)
    args = [str(EXE), *proxy_args(site, "--no-elicit", wait=1), "--", *UPSTREAM]
    proc = subprocess.Popen(args, cwd=site.dir, env=site.env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"protocolVersion": "2025-11-25",
                                                "capabilities": {},
                                                "clientInfo": {"name": "raw", "version": "1"}}})
                         + "\n")
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
                         + "\n")
        for n in range(1, 4):
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": f"signoff-{n}",
                                         "method": "resources/list"}) + "\n")
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                     "params": {"name": "note", "arguments": {"text": "x"}}})
                         + "\n")
        proc.stdin.flush()
        answers: dict[Any, Any] = {}
        while 9 not in answers:
            message = json.loads(proc.stdout.readline())
            if "id" in message:
                answers[message["id"]] = message
        proc.stdin.close()
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
    assert all("resources" in answers[f"signoff-{n}"]["result"] for n in range(1, 4))
    assert answers[9]["result"]["_meta"]["signoff"]["outcome"] == "pending"
    assert site.ledger_lines() == []


def test_the_proxy_on_postgresql(tmp_path: Path) -> None:
    # Two proxies (one per client) on one PostgreSQL: one asked in the dialog, one waiting.
    sys.path.insert(0, str(Path(__file__).parents[2] / "server"))
    from procs import database, signoff

    with database("postgres", tmp_path) as url:
        signoff("db", "migrate", "--db", url, cwd=tmp_path)
        site = dataclasses.replace(make_site(tmp_path), url=url)
        callback = accept()

        async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
            async with proxied(site, mode="legacy", elicitation_callback=callback) as one, \
                    proxied(site, "--no-elicit", mode="legacy", wait=1) as two:
                return (await one.call_tool("note", {"text": "pg"}),
                        await two.call_tool("note", {"text": "waits"}))

        noted, waiting = run(main)
        requests = {r.status for r in site.requests()}
    assert text(noted) == "noted pg" and signoff_meta(waiting)["outcome"] == "pending"
    assert requests == {RequestStatus.SUCCEEDED, RequestStatus.PENDING}
    assert site.ledger_lines() == ["note:pg"]
