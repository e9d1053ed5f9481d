"""Identity edges on a real ``signoff serve``, on both backends: a login link dies with
its user's disable, removal or rotation (enabling again does not revive it); names and
roles are matched whole (no trailing newline); and only an admin who can sign in counts
as the one remaining."""

from __future__ import annotations

import json
import time

import pytest
from procs import Live
from test_sessions import browser, code


def _link(live: Live, name: str) -> str:
    with live.client("boss") as boss:
        made = boss.post(f"/api/v1/users/{name}/login-links")
    assert made.status_code == 201, made.text
    return str(made.json()["url"])


def _opens(live: Live, url: str) -> tuple[int, str | None]:
    """Open a login link as a browser would: the status, and the code shown if refused."""
    with browser(live.server) as tab:
        page = tab.get(url.removeprefix(live.url))
    return page.status_code, (None if page.status_code == 303 else code(page))


@pytest.mark.slow
@pytest.mark.parametrize("change", ["disable+enable", "rotate", "remove"])
def test_an_unused_login_link_dies_with_its_user(live: Live, change: str) -> None:
    fresh = _link(live, "ann")
    stale = _link(live, "ann")
    with live.client("boss") as boss:
        if change == "disable+enable":
            assert boss.post("/api/v1/users/ann/disable").status_code == 200
            assert boss.post("/api/v1/users/ann/enable").json()["status"] == "active"
        elif change == "rotate":
            assert boss.post("/api/v1/users/ann/rotate").status_code == 200
        else:
            assert boss.delete("/api/v1/users/ann").status_code == 200
    assert _opens(live, stale) == (410, "login_link_expired")
    # the other link was made before too: dead as well; a new one works unless removed
    assert _opens(live, fresh) == (410, "login_link_expired")
    if change != "remove":
        assert _opens(live, _link(live, "ann")) == (303, None)


@pytest.mark.slow
@pytest.mark.parametrize("spelling", ["ann\n", "ann\r\n", "dee\n"])
def test_a_name_ending_in_a_newline_is_refused_everywhere(live: Live, spelling: str) -> None:
    with live.client("boss") as boss:
        if spelling.startswith("ann"):
            assert boss.delete("/api/v1/users/ann").status_code == 200
        added = boss.post("/api/v1/users", json={"name": spelling, "roles": ["ops"]})
        assert added.status_code == 400 and code(added) == "invalid_name", added.text
        role = boss.post("/api/v1/users", json={"name": "dee", "roles": ["ops\n"]})
        assert role.status_code == 400 and code(role) == "invalid_name", role.text
        roles = boss.put("/api/v1/users/bob/roles", json={"roles": ["ops\n"]})
        assert roles.status_code == 400 and code(roles) == "invalid_name", roles.text
        names = {u["name"] for u in boss.get("/api/v1/users",
                                              params={"removed": "true"}).json()["users"]}
        assert spelling not in names and "dee" not in names
        assert boss.get("/api/v1/users/bob").json()["roles"] == ["ops"]
    cli = live.cli("users", "add", spelling, "--json", check=False)
    assert cli.returncode != 0 and "invalid_name" in cli.stdout + cli.stderr


@pytest.mark.slow
def test_the_last_admin_who_can_sign_in_cannot_disable_or_remove_itself(live: Live) -> None:
    added = live.cli("users", "add", "old", "--kind", "admin", "--expires", "1s", "--json")
    assert json.loads(added.stdout)["token_expires_at"] is not None
    time.sleep(1.2)
    with live.client("boss") as boss:
        assert boss.get("/api/v1/users/old").json()["status"] == "token_expired"
        for attempt in (boss.post("/api/v1/users/boss/disable"),
                        boss.delete("/api/v1/users/boss")):
            assert attempt.status_code == 409 and code(attempt) == "last_admin", attempt.text
        assert boss.get("/api/v1/users/boss").json()["status"] == "active"
        # the expired admin itself may go: it manages nobody
        assert boss.post("/api/v1/users/old/disable").json()["status"] == "disabled"
        # once another admin can sign in, boss may step down
        renewed = boss.post("/api/v1/users/old/enable")
        assert renewed.status_code == 200
        assert boss.post("/api/v1/users/old/rotate").status_code == 200
        assert boss.post("/api/v1/users/boss/disable").json()["status"] == "disabled"
