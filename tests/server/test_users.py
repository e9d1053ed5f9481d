"""The user lifecycle over real HTTP and the real CLI, on both backends: every change is
audited with its actor, and a user disabled, rotated or removed on one server is refused
by another within a second — its tokens and its sessions alike."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import pytest
from procs import Live, Server
from test_sessions import audit_kinds, browser, code, link_for, secret_of


def refused_within(second: float, check: Callable[[], httpx.Response], status: int,
                   wanted: str) -> float:
    """Seconds until ``check()`` answers ``status`` with code ``wanted`` (at most ``second``)."""
    started = time.monotonic()
    while True:
        answer = check()
        if answer.status_code == status and code(answer) == wanted:
            return time.monotonic() - started
        assert time.monotonic() - started < second, (answer.status_code, answer.text)
        time.sleep(0.02)


def propose(live: Live, call_id: str) -> str:
    with live.client("bot") as bot:
        answer = bot.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "make build"}, "call_id": call_id,
            "context": {"thread_id": f"t-{call_id}"}}).json()
    assert answer["status"] == "pending", answer
    return str(answer["request_id"])


def sign_in(server: Server, token: str) -> str:
    with browser(server) as tab:
        return secret_of(tab.post("/login", data={"token": token}))


@pytest.mark.slow
def test_the_user_lifecycle_over_http(live: Live) -> None:
    other = live.start()
    request_id = propose(live, "before-removal")
    with live.client("ann") as ann:
        assert ann.post(f"/api/v1/requests/{request_id}/decisions",
                        json={"kind": "approve"}).status_code == 200
        refused = ann.get("/api/v1/users")
        assert refused.status_code == 403 and code(refused) == "admin_required"
    session = sign_in(other, live.tokens["ann"])
    boss = live.client("boss")
    on_b = other.client(live.tokens["ann"])
    session_b = browser(other, session)
    try:
        listed = {u["name"]: u for u in boss.get("/api/v1/users").json()["users"]}
        assert set(listed) == {"boss", "ann", "bob", "cy", "bot"}
        assert listed["ann"]["status"] == "active" and len(listed["ann"]["sessions"]) == 1

        # disable on A: ann's token and session are refused on B within a second
        disabled = boss.post("/api/v1/users/ann/disable")
        assert disabled.status_code == 200 and disabled.json()["status"] == "disabled"
        assert disabled.json()["changed"] is True and disabled.json()["sessions"] == []
        took = refused_within(1.0, lambda: on_b.get("/api/v1/requests"), 401,
                              "identity_disabled")
        refused_within(1.0 - took, lambda: session_b.get("/api/v1/requests"), 401,
                       "unauthenticated")
        assert boss.post("/api/v1/users/ann/disable").json()["changed"] is False
        # enable: the token works again; the session it had stays ended
        assert boss.post("/api/v1/users/ann/enable").json()["status"] == "active"
        assert on_b.get("/api/v1/requests").status_code == 200
        assert session_b.get("/api/v1/requests").status_code == 401

        # rotate, with an expiry: the old token is refused at once, the new one works
        rotated = boss.post("/api/v1/users/ann/rotate", json={"expires": "90d"}).json()
        assert rotated["token"].startswith("so_") and rotated["token_expires_at"] > time.time()
        refused_within(1.0, lambda: on_b.get("/api/v1/requests"), 401, "unauthenticated")
        with other.client(rotated["token"]) as fresh:
            assert fresh.get("/api/v1/requests").status_code == 200
        assert boss.get("/api/v1/users/ann").json()["token"] is None  # shown once
        bad = boss.post("/api/v1/users/ann/rotate", json={"expires": "soon"})
        assert bad.status_code == 400 and code(bad) == "invalid_duration"

        # roles; a user added over HTTP with a token that expires
        roles = boss.put("/api/v1/users/cy/roles", json={"roles": ["ops", "sre"]})
        assert roles.json()["roles"] == ["ops", "sre"]
        added = boss.post("/api/v1/users", json={"name": "dee", "expires": "1s"})
        assert added.status_code == 201 and added.json()["kind"] == "approver"
        time.sleep(1.1)
        with other.client(added.json()["token"]) as dee:
            expired = dee.get("/api/v1/requests")
            assert expired.status_code == 401 and code(expired) == "token_expired"
        assert boss.get("/api/v1/users/dee").json()["status"] == "token_expired"

        # the last admin can be neither disabled nor removed
        for attempt in (boss.post("/api/v1/users/boss/disable"),
                        boss.delete("/api/v1/users/boss")):
            assert attempt.status_code == 409 and code(attempt) == "last_admin"

        # remove: gone from the list, the name reserved, her decision still readable
        removed = boss.delete("/api/v1/users/ann")
        assert removed.status_code == 200 and removed.json()["status"] == "removed"
        assert "ann" not in {u["name"] for u in boss.get("/api/v1/users").json()["users"]}
        everyone = boss.get("/api/v1/users", params={"removed": "true"}).json()["users"]
        assert {u["name"]: u["status"] for u in everyone}["ann"] == "removed"
        again = boss.post("/api/v1/users", json={"name": "ann", "roles": ["ops"]})
        assert again.status_code == 409 and code(again) == "user_removed"
        detail = boss.get(f"/api/v1/requests/{request_id}").json()
        assert [d["approver"] for d in detail["decisions"]] == ["ann"]
        missing = boss.post("/api/v1/users/nobody/disable")
        assert missing.status_code == 404 and code(missing) == "not_found"
    finally:
        boss.close()
        on_b.close()
        session_b.close()
    wanted = {("user.disabled", "boss", "ann"), ("user.enabled", "boss", "ann"),
              ("user.token_rotated", "boss", "ann"), ("user.roles", "boss", "cy"),
              ("user.added", "boss", "dee"), ("user.removed", "boss", "ann")}
    # The API's read seals what was committed, waiting 1 s for transactions that hold it
    # back; on a PostgreSQL server shared with other tests one may hold it longer.
    deadline = time.monotonic() + 60
    while True:
        done = {(k, actor, d.get("name")) for k, actor, d in audit_kinds(live)
                if k.startswith("user.")}
        if wanted <= done or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert wanted - done == set(), sorted(done)


@pytest.mark.slow
def test_the_users_commands(live: Live) -> None:
    other = live.start()

    def cli(*args: str, check: bool = True) -> dict[str, object] | list[dict[str, object]]:
        done = live.cli("users", *args, "--json", check=check)
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    added = cli("add", "eve", "--roles", "ops", "--expires", "30d")
    assert isinstance(added, dict) and added["status"] == "active"
    eve_token = str(added["token"])
    text = live.cli("users", "list").stdout
    assert text.splitlines()[0].split()[:4] == ["NAME", "KIND", "STATUS", "SESSIONS"]
    assert any(line.split()[:3] == ["eve", "approver", "active"] for line in text.splitlines())
    session = sign_in(other, eve_token)
    with browser(other) as tab:
        linked = secret_of(tab.get(link_for(live, "eve", other)))
    sessions = cli("sessions", "eve")
    assert isinstance(sessions, list) and len(sessions) == 2
    listed = {u["name"]: u for u in cli("list") if isinstance(u, dict)}
    assert len(listed["eve"]["sessions"]) == 2  # type: ignore[arg-type]

    # revoke one session by id, then disable: refused on the other server within a second
    first = str(sessions[0]["id"])
    assert [s["id"] for s in cli("revoke", "eve", first)] == [first]  # type: ignore[union-attr]
    failed = live.cli("users", "revoke", "eve", first, "--json", check=False)
    assert failed.returncode == 2 and "session_not_found" in failed.stderr
    with other.client(eve_token) as eve, browser(other, linked) as eve_tab:
        assert eve_tab.get("/api/v1/requests").status_code == 200
        out = live.cli("users", "disable", "eve")
        assert out.stdout.strip() == "disabled eve"
        took = refused_within(1.0, lambda: eve.get("/api/v1/requests"), 401,
                              "identity_disabled")
        refused_within(1.0 - took, lambda: eve_tab.get("/api/v1/requests"), 401,
                       "unauthenticated")
        assert live.cli("users", "disable", "eve").stdout.strip() == "eve was already disabled"
        assert cli("enable", "eve")["status"] == "active"  # type: ignore[call-overload]
        assert eve.get("/api/v1/requests").status_code == 200
    assert session not in json.dumps(cli("sessions", "eve"))
    assert cli("sessions", "eve") == []

    rotated = cli("rotate", "eve", "--expires", "12h")
    assert isinstance(rotated, dict) and rotated["token"] != eve_token
    with other.client(eve_token) as old, other.client(str(rotated["token"])) as new:
        assert old.get("/api/v1/requests").status_code == 401
        assert new.get("/api/v1/requests").status_code == 200
    assert cli("roles", "eve", "sre,ops")["roles"] == ["sre", "ops"]  # type: ignore[call-overload]
    assert live.cli("users", "roles", "eve", "").stdout.strip() == "eve now has no roles"

    # the last admin stays; a removed name stays reserved; bad input has typed codes
    for args, wanted in ((("disable", "boss"), "last_admin"), (("remove", "boss"), "last_admin"),
                         (("add", "x", "--expires", "soon"), "invalid_duration"),
                         (("disable", "nobody"), "not_found"),
                         (("login", "bot"), "agent_cannot_sign_in")):
        failed = live.cli("users", *args, "--json", check=False)
        assert failed.returncode == 2, failed.stderr
        assert json.loads(failed.stdout)["error"]["code"] == wanted
    assert cli("remove", "eve")["status"] == "removed"  # type: ignore[call-overload]
    with other.client(str(rotated["token"])) as gone:
        assert gone.get("/api/v1/requests").status_code == 401
    failed = live.cli("users", "add", "eve", "--json", check=False)
    assert json.loads(failed.stdout)["error"]["code"] == "user_removed"
    names = [line.split()[:3] for line in live.cli("users", "list").stdout.splitlines()]
    assert "eve" not in [n[0] for n in names]
    everyone = live.cli("users", "list", "--all").stdout.splitlines()
    assert ["eve", "approver", "removed"] in [line.split()[:3] for line in everyone]

    # A command's read seals what was committed, waiting 1 s for transactions that hold it
    # back; on a PostgreSQL server shared with other tests one may hold it longer.
    deadline = time.monotonic() + 60
    while json.loads(live.cli("audit", "verify", "--json", check=False).stdout)["unsealed"]:
        assert time.monotonic() < deadline, "audit events left unsealed for 60 s"
        time.sleep(0.2)
    events = json.loads(live.cli("audit", "export", "--json").stdout)
    ours = {(e["kind"], e["data"]["name"]) for e in events
            if e["kind"].startswith("user.") and str(e["actor"]).startswith("os:")}
    for kind in ("user.added", "user.login_link", "user.disabled", "user.enabled",
                 "user.token_rotated", "user.roles", "user.removed"):
        assert (kind, "eve") in ours, kind
    assert any(e["kind"] == "session.ended" and e["data"]["reason"] == "revoked"
               for e in events)
    assert str(added["token"]) not in json.dumps(events)
