"""Signing in, over real HTTP against real ``signoff serve`` processes on both backends:
one-time login links, sessions that are not tokens, logout and expiry judged alike by
every server sharing the database, and open event streams that stop with the session."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import httpx
import pytest
from procs import Live, Server, start_server

COOKIE = "signoff_session"


def code(response: httpx.Response) -> str:
    """The problem code of an API answer, or the code shown on a page."""
    if response.headers.get("content-type", "").startswith("application/problem+json"):
        return str(response.json()["code"])
    found = re.search(r'role="alert"><strong>([a-z_]+)</strong>', response.text)
    assert found, response.text[:500]
    return found.group(1)


def secret_of(response: httpx.Response) -> str:
    """The session cookie a sign-in answer sets."""
    header = response.headers["set-cookie"]
    found = re.match(rf"{COOKIE}=([^;]+);", header)
    assert found, header
    return found.group(1)


def browser(server: Server, secret: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=30, follow_redirects=False,
                        cookies={COOKIE: secret} if secret else None)


def csrf_of(page: httpx.Response) -> str:
    return page.text.split('name="csrf-token" content="')[1].split('"')[0]


def link_for(live: Live, name: str, server: Server | None = None) -> str:
    done = live.cli("users", "login", name, "--url", (server or live.server).url, "--json")
    return str(json.loads(done.stdout)["url"])


def audit_kinds(live: Live) -> list[tuple[str, str | None, dict[str, Any]]]:
    with live.client("boss") as boss:
        events = boss.get("/api/v1/audit", params={"limit": 1000}).json()["events"]
    return [(e["kind"], e["actor"], e["data"]) for e in events]


@pytest.mark.slow
def test_a_login_link_works_once_and_the_cookie_is_not_a_token(live: Live) -> None:
    other = live.start()
    url = link_for(live, "ann")
    assert "/login?code=sol_" in url and "so_" not in url.split("code=")[1][:3]
    with browser(live.server) as tab:
        first = tab.get(url)
        assert first.status_code == 303 and first.headers["location"] == "/inbox"
        set_cookie = first.headers["set-cookie"].lower()
        assert "httponly" in set_cookie and "samesite=strict" in set_cookie
        secret = secret_of(first)
        assert live.tokens["ann"] not in first.headers["set-cookie"]
        assert not secret.startswith("so_")
        assert "ann (approver" in tab.get("/inbox").text
    # The second use is refused, on this server and on the other, with a page and a code.
    for server in (live.server, other):
        with browser(server) as again:
            second = again.get(url)
            assert second.status_code == 410 and code(second) == "login_link_used"
            assert "already used" in second.text and COOKIE not in second.headers.get(
                "set-cookie", "")
    with browser(live.server) as tab:
        unknown = tab.get("/login", params={"code": "sol_nothing"})
        assert unknown.status_code == 401 and code(unknown) == "login_link_unknown"
        in_url = tab.get("/login", params={"token": live.tokens["ann"]})
        assert in_url.status_code == 400 and code(in_url) == "token_in_url"
        assert "set-cookie" not in in_url.headers
        agent = tab.post("/login", data={"token": live.tokens["bot"]})
        assert agent.status_code == 403 and code(agent) == "agent_cannot_sign_in"
        wrong = tab.post("/login", data={"token": "so_wrong"})
        assert wrong.status_code == 401 and code(wrong) == "unauthenticated"
        pasted = tab.post("/login", data={"token": live.tokens["ann"]})
        assert pasted.status_code == 303 and secret_of(pasted) != secret
    # The cookie is no token: as a bearer it is refused; the session works on both servers.
    with other.client(secret) as as_bearer:
        refused = as_bearer.get("/api/v1/requests")
        assert refused.status_code == 401 and code(refused) == "unauthenticated"
    with browser(other, secret) as on_b, browser(live.server, secret) as on_a:
        assert on_b.get("/api/v1/requests").status_code == 200
        assert csrf_of(on_b.get("/inbox")) == csrf_of(on_a.get("/inbox"))  # derived, shared
    listed = json.loads(live.cli("users", "sessions", "ann", "--json").stdout)
    assert sorted(s["via"] for s in listed) == ["link", "token"]
    with browser(live.server, secret) as tab:  # signing in again ends the browser's old session
        renewed = secret_of(tab.post("/login", data={"token": live.tokens["ann"]}))
    with browser(other, secret) as old, browser(other, renewed) as new:
        assert old.get("/api/v1/requests").status_code == 401
        assert new.get("/api/v1/requests").status_code == 200
    # An admin may mint a link over HTTP; nobody else may.
    with live.client("boss") as boss, live.client("ann") as ann:
        minted = boss.post("/api/v1/users/cy/login-links")
        assert minted.status_code == 201 and minted.json()["url"].startswith(live.url)
        refused = ann.post("/api/v1/users/cy/login-links")
        assert refused.status_code == 403 and code(refused) == "admin_required"
    with browser(other) as cy_tab:
        assert cy_tab.get(minted.json()["url"].replace(live.url, other.url)).status_code == 303


@pytest.mark.slow
def test_logout_ends_the_session_on_every_server_and_its_event_stream(live: Live) -> None:
    other = live.start()
    with browser(live.server) as tab:
        secret = secret_of(tab.get(link_for(live, "ann")))
    heard: list[str] = []
    streaming = threading.Event()
    ended = threading.Event()

    def listen() -> None:
        with browser(other, secret) as on_b, on_b.stream("GET", "/api/v1/events") as stream:
            for line in stream.iter_lines():
                streaming.set()
                heard.append(line)
        ended.set()

    threading.Thread(target=listen, daemon=True).start()
    assert streaming.wait(10)
    with browser(live.server, secret) as on_a:
        page = on_a.get("/inbox")
        refused = on_a.post("/logout", data={"csrf": "wrong"})
        assert refused.status_code == 403 and code(refused) == "csrf_failed"
        out = on_a.post("/logout", data={"csrf": csrf_of(page)})
        assert out.status_code == 303 and out.headers["location"].startswith("/login")
        loggedout = time.monotonic()
    with live.client("boss") as boss:
        head = boss.get("/api/v1/audit", params={"limit": 1}).json()["head_index"]
    time.sleep(1.1)  # an open stream rechecks its session at most once a second
    live.cli("users", "login", "cy", "--url", live.url)  # an audited event after the logout
    assert ended.wait(10), "the event stream of an ended session stays open"
    ids = [int(line[4:]) for line in heard if line.startswith("id: ")]
    assert all(index <= head for index in ids), (head, ids)  # nothing after the logout
    for server in (other, live.server):
        with browser(server, secret) as tab:
            gone = tab.get("/api/v1/requests")
            assert gone.status_code == 401 and code(gone) == "unauthenticated"
            page = tab.get("/inbox")
            assert page.status_code == 303 and page.headers["location"].startswith("/login")
    assert time.monotonic() - loggedout < 15
    kinds = [(k, actor) for k, actor, _ in audit_kinds(live)]
    assert ("session.started", "ann") in kinds and ("session.ended", "ann") in kinds
    assert any(k == "user.login_link" and (actor or "").startswith("os:") for k, actor in kinds)


@pytest.mark.slow
def test_sessions_expire_when_idle_and_at_their_absolute_limit(live: Live) -> None:
    short = start_server(live.db, live.cwd, env={"SIGNOFF_SESSION_IDLE": "1",
                                                 "SIGNOFF_SESSION_MAX": "3",
                                                 "SIGNOFF_LOGIN_LINK_TTL": "1"})
    live.others.append(short)
    with browser(short) as ann_tab, browser(short) as bob_tab:
        idle = secret_of(ann_tab.post("/login", data={"token": live.tokens["ann"]}))
        busy = secret_of(bob_tab.post("/login", data={"token": live.tokens["bob"]}))
    with live.client("boss") as boss:  # minted on the short server: good for one second
        link = boss.post("/api/v1/users/cy/login-links").json()["url"]
    with httpx.Client(base_url=short.url, timeout=30) as boss_short:
        boss_short.headers["Authorization"] = f"Bearer {live.tokens['boss']}"
        short_link = boss_short.post("/api/v1/users/cy/login-links").json()
    assert short_link["expires_at"] - time.time() < 2
    started = time.monotonic()
    with browser(short, busy) as bob:
        while time.monotonic() - started < 2.5:  # activity keeps bob's session going…
            assert bob.get("/api/v1/requests").status_code == 200
            time.sleep(0.2)
        with browser(short, idle) as ann, browser(live.server, idle) as ann_a:
            for tab in (ann, ann_a):  # …ann's went idle, on every server alike
                refused = tab.get("/api/v1/requests")
                assert refused.status_code == 401 and code(refused) == "session_expired"
            page = ann.get("/inbox")
            assert page.headers["location"] == "/login?why=session_expired"
            assert "session expired" in ann.get(page.headers["location"]).text
        with browser(short) as cy:
            late = cy.get(short_link["url"].replace(live.url, short.url))
            assert late.status_code == 410 and code(late) == "login_link_expired"
            assert cy.get(link.replace(live.url, short.url)).status_code == 303  # 10 min
        while time.monotonic() - started < 3.3:
            time.sleep(0.2)
            bob.get("/api/v1/requests")
        over = bob.get("/api/v1/requests")  # …until its absolute limit
        assert over.status_code == 401 and code(over) == "session_expired"
