"""A tool's definition changing mid-session (the "rug pull"), and what the dialog shows.

``upstream.py``'s ``shuffle`` rewrites ``note`` (destructive → read-only) and says so
(``notifications/tools/list_changed``). Neither the session's review mode nor a thread
grant made under the old definition may carry over: the call is asked anew, the
request says why, and the inbox of a real ``signoff serve`` on the same database flags
it. Both backends.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import types
from mcpkit import Site, make_site, pending, proxied, run, signoff_meta, text

from signoff import Decision
from signoff.model import RequestStatus, ToolCall
from signoff.policy.hints import ToolHints
from signoff.policy.modes import trusted_context

sys.path.insert(0, str(Path(__file__).parents[2] / "server"))
from procs import database, signoff, start_server

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Site]:
    plain = make_site(tmp_path)
    if request.param == "sqlite":
        yield plain
        return
    with database("postgres", tmp_path) as url:
        signoff("db", "migrate", "--db", url, cwd=tmp_path)
        yield dataclasses.replace(plain, url=url)


def decide(site: Site, request_id: str, decision: Decision) -> None:
    gate = site.gate()
    try:
        try:
            identity = gate.user("ann").identity
        except Exception:
            identity, _ = gate.add_user("ann")
        gate.decide(request_id, decision, identity=identity)
    finally:
        gate.close()


def request_of(site: Site, result: types.CallToolResult) -> Any:
    rid = signoff_meta(result)["request_id"]
    return next(r for r in site.requests() if r.id == rid)


def inbox_pages(site: Site, request_id: str) -> tuple[str, str]:
    """The request page and the inbox list, from a real ``signoff serve``."""
    gate = site.gate()
    try:
        _, token = gate.add_user("viewer")
    finally:
        gate.close()
    server = start_server(site.url or str(site.db), site.dir)
    try:
        with httpx.Client(base_url=server.url, timeout=30,
                          headers={"Authorization": f"Bearer {token}"}) as client:
            page = client.get(f"/requests/{request_id}")
            listing = client.get("/inbox")
        assert page.status_code == 200 and listing.status_code == 200
        return page.text, listing.text
    finally:
        server.stop()


def test_full_mode_does_not_carry_over_to_a_changed_definition(site: Site) -> None:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with proxied(site, "--no-elicit", "--mode", "full", mode="legacy",
                           wait=1) as client:
            out["before"] = await client.call_tool("note", {"text": "before"})  # full: runs
            await client.call_tool("shuffle", {})
            out["after"] = await client.call_tool("note", {"text": "after"})
            request = request_of(site, out["after"])
            out["pages"] = await anyio.to_thread.run_sync(inbox_pages, site, request.id)
            await anyio.to_thread.run_sync(decide, site, request.id, Decision.approve())
            out["approved"] = await client.call_tool("note", {"text": "after"})  # joins it
            # A human approved a call under the new definition: full mode counts again.
            out["later"] = await client.call_tool("note", {"text": "later"})
        return out

    out = run(main)
    assert text(out["before"]) == "noted before"
    assert signoff_meta(out["after"])["outcome"] == "pending", text(out["after"])
    [request] = site.requests()
    assert [r["code"] for r in request.reasons] == ["definition_changed"]
    assert request.mandatory and request.definition_hash is not None
    page, listing = out["pages"]
    assert 'id="definition-changed"' in page and "definition changed" in listing
    assert text(out["approved"]) == "noted after" and text(out["later"]) == "noted later"
    assert site.ledger_lines() == ["note:before", "note:after", "note:later"]
    assert request.status is RequestStatus.SUCCEEDED


def test_a_thread_grant_does_not_carry_over_to_a_changed_definition(site: Site) -> None:
    async def main() -> list[types.CallToolResult]:
        async with proxied(site, "--no-elicit", mode="legacy", wait=1) as client:
            asked = await client.call_tool("note", {"text": "x"})
            await anyio.to_thread.run_sync(decide, site, signoff_meta(asked)["request_id"],
                                           Decision.approve(scope="thread"))
            ran = await client.call_tool("note", {"text": "x"})  # joins: approved, runs
            granted = await client.call_tool("note", {"text": "x"})  # the grant admits it
            await client.call_tool("shuffle", {})
            changed = await client.call_tool("note", {"text": "x"})
            return [asked, ran, granted, changed]

    asked, ran, granted, changed = run(main)
    assert signoff_meta(asked)["outcome"] == "pending"
    assert text(ran) == "noted x" and text(granted) == "noted x"
    assert signoff_meta(changed)["outcome"] == "pending", text(changed)
    assert site.ledger_lines() == ["note:x", "note:x"]
    first, second = sorted(site.requests(), key=lambda r: r.created_at)
    assert first.definition_hash != second.definition_hash
    assert [r["code"] for r in second.reasons] == ["definition_changed"]
    gate = site.gate()
    try:
        [grant] = gate.store.grants_for(thread_id=first.thread_id, session_id=None,
                                        tool="t__note")
    finally:
        gate.close()
    assert grant.definition_hash == first.definition_hash


def test_a_grant_admits_only_its_own_definition(site: Site) -> None:
    # In the kernel: a thread grant made under definition A admits the same call under A
    # only; under B it is asked (no changed flag needed: the grant itself is bound).
    gate = site.gate()
    try:
        gate.policy.hints.update({"t__note": ToolHints(destructive=True)})  # as listed
        context = trusted_context(thread_id="t-def", session_id=None)
        a, b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
        first = gate.propose(ToolCall(id="c1", name="t__note", args={"text": "x"},
                                      definition_hash=a), context)
        assert first.request is not None and first.request.definition_hash == a
        identity, _ = gate.add_user("ann")
        gate.decide(first.request.id, Decision.approve(scope="thread"), identity=identity)
        other = gate.propose(ToolCall(id="c2", name="t__note", args={"text": "x"},
                                      definition_hash=b), context)
        same = gate.propose(ToolCall(id="c3", name="t__note", args={"text": "x"},
                                     definition_hash=a), context)
    finally:
        gate.close()
    assert other.kind.value == "pending" and other.verdict.code != "grant"
    assert same.kind.value == "allowed" and same.verdict.code == "grant"


def test_the_dialog_flags_invisible_and_direction_characters(site: Site) -> None:
    seen: list[str] = []

    async def person(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        return types.ElicitResult(action="decline")

    async def main() -> types.CallToolResult:
        async with proxied(site, mode="legacy", wait=5, elicitation_callback=person) as c:
            return await c.call_tool("note", {"text": "rm -rf /tmp/x\u202egnp.\u200bjs"})

    result = run(main)
    assert signoff_meta(result)["outcome"] == "rejected"
    [message] = seen
    assert "\u202e" not in message and "\u200b" not in message
    assert "⟦U+202E right-to-left override⟧" in message
    assert "⟦U+200B zero width space⟧" in message
    assert "WARNING: 2 invisible" in message
    assert site.ledger_lines() == []
    assert not pending(site)
