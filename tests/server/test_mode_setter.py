"""A mode never carries more authority than its setter (issue 42, item 3), through a real
server on both backends: approvers set the thread's mode over ``PUT /api/v1/threads``, an
agent proposes over ``POST /api/v1/calls``, and the verdict says why a mode was not applied.
Only admins (by default) may set ``full``: anyone else gets a 403 ``full_mode_not_allowed``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from signoff import Gate, Policy
from signoff.server import create_app
from signoff.server.running import ServerThread
from signoff.server.settings import ServerSettings
from signoff.store.base import Store

POLICY = """
[policy]
version = "mode-setter-1"
gated = ["note", "restart", "deploy", "rotate"]
ceiling = "full"
[review]
{review}
[tools.note]
risk = "low"
[tools.restart]
risk = "low"
[tools.deploy]
risk = "low"
[tools.rotate]
risk = "low"

[[rules]]
id = "restart-ops"
effect = "ask"
tool = "restart"
roles = ["ops"]

[[rules]]
id = "deploy-two"
effect = "ask"
tool = "deploy"
approvals = 2

[[rules]]
id = "rotate-dual"
effect = "ask"
tool = "rotate"
requires = [{role = "ops", approvals = 1}, {role = "security", approvals = 1}]
"""

CALLS = {"note": {"text": "hi"}, "restart": {"service": "web"}, "deploy": {"env": "staging"},
         "rotate": {"key": "k1"}}


@dataclass
class Server:
    gate: Gate
    url: str
    tokens: dict[str, str]
    calls: int = 0

    def client(self, name: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10,
                            headers={"Authorization": f"Bearer {self.tokens[name]}"})

    def set_mode(self, name: str, thread: str, mode: str) -> httpx.Response:
        with self.client(name) as who:
            return who.put(f"/api/v1/threads/{thread}", json={"review_mode": mode})

    def propose_all(self, thread: str) -> dict[str, dict[str, Any]]:
        """One run proposing each call; what waits is withdrawn after (the thread's next
        run may start)."""
        out = {}
        self.calls += 1
        with self.client("bot") as bot:
            for tool, args in CALLS.items():
                answer = bot.post("/api/v1/calls", json={
                    "tool": tool, "args": args, "call_id": f"{tool}-{self.calls}",
                    "context": {"thread_id": thread, "run_id": f"run-{self.calls}"}})
                assert answer.status_code == 200, answer.text
                out[tool] = answer.json()
            for got in out.values():
                if got["status"] == "pending":
                    withdrawn = bot.post(f"/api/v1/requests/{got['request_id']}/cancel",
                                         json={"reason": "next run"})
                    assert withdrawn.status_code == 200, withdrawn.text
        return out


def _serve(store: Store, review: str = "") -> Iterator[Server]:
    gate = Gate(Policy.from_toml(POLICY.replace("{review}", review)), store)
    tokens = {name: gate.add_user(name, roles=roles, kind=kind)[1] for name, roles, kind in [
        ("root", [], "admin"), ("rita", [], "approver"), ("olga", ["ops"], "approver"),
        ("lena", ["lead"], "approver"), ("bot", [], "agent")]}
    with ServerThread(create_app(gate, ServerSettings(port=0), feed_poll=0.2)) as server:
        yield Server(gate=gate, url=server.url, tokens=tokens)


@pytest.fixture
def server(store: Store) -> Iterator[Server]:
    yield from _serve(store)


def _asks(got: dict[str, Any], code: str) -> None:
    assert got["status"] == "pending", got
    codes = {r.get("code") for r in got["verdict"]["reasons"]}
    assert code in codes, codes


def test_a_roleless_approvers_auto_leaves_role_and_quorum_calls_with_humans(
        server: Server) -> None:
    answer = server.set_mode("rita", "t-rita", "full")
    assert answer.status_code == 403, answer.text
    assert answer.json()["code"] == "full_mode_not_allowed"
    with server.client("rita") as rita:
        assert rita.get("/api/v1/threads/t-rita").json()["stored"] is False
    assert server.set_mode("rita", "t-rita", "auto").status_code == 200
    got = server.propose_all("t-rita")
    assert got["note"]["status"] == "allowed"  # what rita could approve, auto still passes
    _asks(got["restart"], "mode_setter_lacks_role")
    _asks(got["deploy"], "mode_needs_quorum")
    _asks(got["rotate"], "mode_needs_dual_control")


def test_an_ops_setter_lends_ops_never_a_quorum_and_nothing_once_disabled(
        server: Server) -> None:
    assert server.set_mode("olga", "t-olga", "auto").status_code == 200
    got = server.propose_all("t-olga")
    assert got["restart"]["status"] == "allowed"
    _asks(got["deploy"], "mode_needs_quorum")
    _asks(got["rotate"], "mode_needs_dual_control")
    with server.client("root") as root:
        disabled = root.post("/api/v1/users/olga/disable")
        assert disabled.status_code == 200, disabled.text
    got = server.propose_all("t-olga")
    for tool in CALLS:
        _asks(got[tool], "mode_setter_inactive")


def test_the_admins_full_lends_the_admins_roles(server: Server) -> None:
    assert server.set_mode("root", "t-root", "full").status_code == 200
    got = server.propose_all("t-root")
    assert got["note"]["status"] == "allowed"
    _asks(got["restart"], "mode_setter_lacks_role")  # root holds no ops
    _asks(got["deploy"], "mode_needs_quorum")
    server.gate.set_roles("root", ["ops"])
    got = server.propose_all("t-root")
    assert (got["restart"]["status"], got["restart"]["verdict"]["code"]) == \
        ("allowed", "mode_full")
    _asks(got["deploy"], "mode_needs_quorum")
    _asks(got["rotate"], "mode_needs_dual_control")


def test_full_mode_role_names_who_else_may_set_full(store: Store) -> None:
    for server in _serve(store, 'full_mode_role = "lead"'):
        for name in ("rita", "olga"):
            answer = server.set_mode(name, f"t-{name}", "full")
            assert (answer.status_code, answer.json()["code"]) == (403, "full_mode_not_allowed")
        assert server.set_mode("lena", "t-lena", "full").status_code == 200
        assert server.set_mode("root", "t-root", "full").status_code == 200
        got = server.propose_all("t-lena")
        assert got["note"]["status"] == "allowed"
        _asks(got["restart"], "mode_setter_lacks_role")
