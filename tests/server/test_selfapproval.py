"""No self-approval by any route, over real HTTP into real ``signoff serve`` processes on
SQLite and PostgreSQL: the decision API, the inbox forms, the CLI, a thread's mode, a
thread grant, an edit — and what self-service modes open (and keep closed).

The policy is the starter of ``signoff init``: ``execute`` is gated, so ``make …`` asks a
human in manual mode and runs without one in full mode.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from procs import Live, live_server

from signoff.errors import Forbidden
from signoff.policy.starter import starter_toml
from signoff.remote import Client


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    return body


@contextlib.contextmanager
def inbox_session(live: Live, user: str) -> Iterator[tuple[httpx.Client, str]]:
    """A browser-like client signed in to the inbox as ``user`` (through whatever
    ``/login`` does) and the CSRF token its pages carry."""
    with live.client(follow_redirects=False) as client:
        signed = client.post("/login", data={"token": live.tokens[user]})
        assert signed.status_code == 303, signed.text
        page = client.get("/inbox")
        assert page.status_code == 200
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found is not None
        yield client, found.group(1)


def propose(client: httpx.Client, call_id: str, thread: str, command: str = "make build",
            run: str | None = None) -> dict[str, Any]:
    context = {"thread_id": thread, **({"run_id": run} if run else {})}
    answer = client.post("/api/v1/calls", json={"tool": "execute", "call_id": call_id,
                                                 "args": {"command": command},
                                                 "context": context})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def decide(client: httpx.Client, request_id: str, **body: Any) -> httpx.Response:
    return client.post(f"/api/v1/requests/{request_id}/decisions", json=body)


@pytest.mark.slow
def test_no_self_approval_by_any_route(live: Live) -> None:
    with live.client("ann") as ann, live.client("bob") as bob, live.client("bot") as bot:
        # The route: ann's own call is refused, so she raises the thread's mode.
        own = propose(ann, "a1", "t1")
        assert own["status"] == "pending"
        mine = own["request_id"]
        for body in ({"kind": "approve"}, {"kind": "approve", "scope": "thread"},
                     {"kind": "approve", "scope": "auto_thread"},
                     {"kind": "edit", "args": {"command": "make test"}},
                     {"kind": "respond", "message": "fine"}):
            problem(decide(ann, mine, **body), 403, "self_approval")
        problem(ann.put("/api/v1/threads/t1", json={"review_mode": "full"}), 403,
                "self_approval")
        problem(ann.put("/api/v1/threads/t1", json={"review_mode": "auto"}), 403,
                "self_approval")
        assert ann.put("/api/v1/threads/t1", json={"review_mode": "manual"}).status_code == 200
        assert propose(ann, "a2", "t1", "make lint")["status"] == "pending"  # still asks

        # Another principal on her thread: ann may approve its call once, but neither
        # grant the thread (the grant would cover her own calls) nor edit it.
        theirs = propose(bot, "b1", "t1", "make docs")["request_id"]
        problem(decide(ann, theirs, kind="approve", scope="thread"), 403, "self_approval")
        problem(decide(ann, theirs, kind="approve", scope="auto_thread"), 403,
                "self_approval")  # auto-approving the thread would pass her own calls
        problem(decide(ann, theirs, kind="edit", args={"command": "make all"}), 403,
                "self_approval")

        # The inbox: the same refusals through the forms (cookie + CSRF).
        with inbox_session(live, "ann") as (browser, csrf):
            page = browser.get(f"/requests/{theirs}").text
            assert 'id="approve-once"' in page and 'id="approve-thread"' not in page
            assert 'id="approve-auto-thread"' not in page
            assert 'id="edit-box"' not in page and "cannot edit its calls" in page
            assert 'id="approve-once"' not in browser.get(f"/requests/{mine}").text
            for request_id, action in ((mine, "approve_once"), (theirs, "approve_thread"),
                                       (theirs, "approve_auto_thread")):
                refused = browser.post(f"/requests/{request_id}/decide",
                                       data={"csrf": csrf, "action": action})
                assert refused.status_code == 403 and "self_approval" in refused.text
            refused = browser.post(f"/requests/{theirs}/decide", data={
                "csrf": csrf, "action": "edit", "args": '{"command": "make all"}'})
            assert refused.status_code == 403 and "self_approval" in refused.text
            refused = browser.post("/threads/t1/mode", data={
                "csrf": csrf, "review_mode": "full", "confirm": "yes"})
            assert refused.status_code == 403 and "self_approval" in refused.text

        # The CLI, with her token.
        for extra in ((), ("--thread-grant",)):
            cli = live.cli("requests", "approve", mine, "--token", live.tokens["ann"], *extra,
                           check=False)
            assert cli.returncode == 2 and "[self_approval]" in cli.stderr
        cli = live.cli("requests", "approve", theirs, "--thread-grant", "--token",
                       live.tokens["ann"], check=False)
        assert cli.returncode == 2 and "[self_approval]" in cli.stderr
        cli = live.cli("requests", "edit", theirs, "--args", '{"command": "make all"}',
                       "--token", live.tokens["ann"], check=False)
        assert cli.returncode == 2 and "[self_approval]" in cli.stderr
        cli = live.cli("requests", "approve", theirs, "--token", live.tokens["ann"])
        assert "approved" in cli.stdout  # once, for bot: a second human for bot's call

        # Raising a fresh thread first, then asking on it: the mode does not count for her.
        # (auto: only admins may set full, [review] full_mode_role)
        problem(ann.put("/api/v1/threads/t2", json={"review_mode": "full"}), 403,
                "full_mode_not_allowed")
        assert ann.put("/api/v1/threads/t2", json={"review_mode": "auto"}).status_code == 200
        raised = propose(ann, "a3", "t2")
        assert raised["status"] == "pending" and raised["verdict"]["review_mode"] == "manual"
        assert propose(bot, "b2", "t2")["status"] == "allowed"  # others get the mode
        # ... and the thread says so, over the API and on its inbox page.
        shown = bob.get("/api/v1/threads/t2").json()
        assert (shown["review_mode"], shown["set_by"], shown["setter_calls_mode"]) == \
            ("auto", "ann", "manual")
        with inbox_session(live, "bob") as (tab, _):
            page = tab.get("/threads/t2").text
        assert "ann's own calls on this thread are still reviewed in manual mode" in page

        # Another approver may raise ann's thread: then her calls there run without review.
        assert bob.put("/api/v1/threads/t1", json={"review_mode": "auto"}).status_code == 200
        assert propose(ann, "a4", "t1", "make clean")["status"] == "allowed"
        assert bob.get(f"/api/v1/requests/{mine}").json()["status"] == "pending"

        events = bob.get("/api/v1/audit", params={"limit": 1000}).json()["events"]
        modes = [(e["actor"], e["data"]["thread_id"], e["data"]["review_mode"])
                 for e in events if e["kind"] == "thread.mode"]
        assert modes == [("ann", "t1", "manual"), ("ann", "t2", "auto"), ("bob", "t1", "auto")]
        assert not [e for e in events if e["kind"] == "grant.created"]


SELF_SERVICE = starter_toml("{root}").replace(
    'ceiling = "full"', 'ceiling = "auto"\nself_service_modes = true')


@pytest.fixture(params=["sqlite", "postgres"])
def self_service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    """A real server whose policy opts in to self-service modes (ceiling auto)."""
    with live_server(request.param, tmp_path, policy=SELF_SERVICE) as running:
        yield running


@pytest.mark.slow
def test_self_service_modes_raise_ones_own_thread_but_never_approve(
        self_service: Live) -> None:
    live = self_service
    with live.client("ann") as ann:
        mine = propose(ann, "a1", "t1")["request_id"]
        # raising her own thread's mode: up to the ceiling
        problem(ann.put("/api/v1/threads/t1", json={"review_mode": "full"}), 403,
                "above_ceiling")
        assert ann.put("/api/v1/threads/t1", json={"review_mode": "auto"}).json()[
            "review_mode"] == "auto"
        # the reviewer approves her next medium-risk call on her behalf
        later = propose(ann, "a2", "t1", "make lint")
        assert (later["status"], later["verdict"]["review_mode"]) == ("allowed", "auto")
        # and still no route approves, edits or grants her own pending request
        for body in ({"kind": "approve"}, {"kind": "approve", "scope": "thread"},
                     {"kind": "approve", "scope": "auto_thread"},
                     {"kind": "edit", "args": {"command": "make test"}}):
            problem(decide(ann, mine, **body), 403, "self_approval")
        cli = live.cli("requests", "approve", mine, "--token", live.tokens["ann"], check=False)
        assert cli.returncode == 2 and "[self_approval]" in cli.stderr
        with inbox_session(live, "ann") as (browser, csrf):
            refused = browser.post(f"/requests/{mine}/decide",
                                   data={"csrf": csrf, "action": "approve_once"})
            assert refused.status_code == 403 and "self_approval" in refused.text
        assert ann.get(f"/api/v1/requests/{mine}").json()["status"] == "pending"


@pytest.mark.slow
def test_cancel_who_asked_edit_reasons_and_reports(live: Live) -> None:
    with live.client("bot") as bot, live.client("cy") as cy, live.client("ann") as ann:
        stuck = propose(bot, "c1", "t3", run="r1")["request_id"]
        shown = cy.get(f"/api/v1/requests/{stuck}").json()
        assert (shown["principal"], shown["agent"]) == ("bot", None)
        assert cy.get("/api/v1/requests").json()["requests"][0]["principal"] == "bot"
        problem(bot.post("/api/v1/calls", json={
            "tool": "execute", "call_id": "c2", "args": {"command": "make build"},
            "context": {"thread_id": "t3", "run_id": "r2"}}), 409, "thread_waiting")

        # API: only its asker or an admin may cancel, with a reason
        url = f"/api/v1/requests/{stuck}/cancel"
        problem(cy.post(url, json={"reason": "not mine"}), 403, "not_requester")
        problem(bot.post(url, json={"reason": ""}), 422, "invalid_body")
        cancelled = bot.post(url, json={"reason": "the run died without a checkpointer"})
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        problem(bot.post(url, json={"reason": "again"}), 409, "already_decided")
        outcome = bot.get(f"/api/v1/calls/{stuck}").json()
        assert (outcome["kind"], outcome["reason"]) == \
            ("cancelled", "the run died without a checkpointer")
        freed = propose(bot, "c2", "t3", run="r2")
        assert freed["status"] == "pending"  # the thread is free again
        with Client(live.url, token=live.tokens["bot"]) as client, \
                Client(live.url, token=live.tokens["cy"]) as other:
            assert client.cancel(freed["request_id"], "done")["outcome_reason"] == "done"
            with pytest.raises(Forbidden) as refused:
                other.cancel(stuck, "x")
            assert refused.value.code == "not_requester"

        # the inbox: an admin cancels with a form (CSRF required); ann sees a requester
        second = propose(bot, "c3", "t4")["request_id"]
        with inbox_session(live, "boss") as (admin, csrf):
            assert 'id="cancel-box"' in admin.get(f"/requests/{second}").text
            refused = admin.post(f"/requests/{second}/cancel", data={"reason": "x"})
            assert refused.status_code == 403 and "csrf_failed" in refused.text
            done = admin.post(f"/requests/{second}/cancel",
                              data={"csrf": csrf, "reason": "asked twice"})
            assert done.status_code == 303
        assert bot.get(f"/api/v1/calls/{second}").json()["reason"] == "asked twice"
        third = propose(bot, "c4", "t5")["request_id"]
        with inbox_session(live, "ann") as (browser, csrf):
            listing = browser.get("/inbox").text
            assert "<th>Requested by</th>" in listing
            assert '<td class="requester">bot' in listing
            assert 'id="cancel-box"' not in browser.get(f"/requests/{third}").text
            refused = browser.post(f"/requests/{third}/cancel",
                                   data={"csrf": csrf, "reason": "mine now"})
            assert refused.status_code == 403 and "not_requester" in refused.text
        # the CLI
        cli = live.cli("requests", "cancel", third, "--reason", "x", "--token",
                       live.tokens["cy"], check=False)
        assert cli.returncode == 2 and "[not_requester]" in cli.stderr
        cli = live.cli("requests", "show", third)
        assert "asked by bot" in cli.stdout
        cli = live.cli("requests", "cancel", third, "--reason", "superseded", "--token",
                       live.tokens["bot"])
        assert "cancelled by bot (superseded)" in cli.stdout

        # an edit's reason reaches the agent; its result is audited under the agent
        edited = propose(bot, "c5", "t6")["request_id"]
        assert decide(ann, edited, kind="edit", args={"command": "make test"},
                      reason="run the tests first").json()["status"] == "approved"
        waiting = bot.get(f"/api/v1/calls/{edited}").json()
        assert (waiting["kind"], waiting["code"], waiting["reason"], waiting["args"]) == \
            ("approved", "edited", "run the tests first", {"command": "make test"})
        claim = bot.post(f"/api/v1/calls/{edited}/claim").json()
        result = bot.post(f"/api/v1/calls/{edited}/result", json={
            "fencing_token": claim["fencing_token"], "result": {"exit": 0}}).json()
        assert (result["kind"], result["reason"]) == ("executed", "run the tests first")

        events = cy.get("/api/v1/audit", params={"limit": 1000}).json()["events"]
        actors = {(e["kind"], e["request_id"]): e["actor"] for e in events}
        assert actors[("request.cancelled", stuck)] == "bot"
        assert actors[("request.cancelled", second)] == "boss"
        assert actors[("request.cancelled", third)] == "bot"
        assert actors[("request.executing", edited)] == "bot"
        assert actors[("request.succeeded", edited)] == "bot"
