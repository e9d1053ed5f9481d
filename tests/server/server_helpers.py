"""What the server tests share: a real server (uvicorn on a free port, over a gate on
SQLite) with a clock the test can move, tokens for an admin, two ops approvers, an
approver without roles and an agent; and small steps."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from signoff import Gate, Policy, SqliteStore
from signoff.keys import SigningKey
from signoff.server import ServerSettings, create_app
from signoff.server.running import ServerThread

SERVER_POLICY = """
[policy]
version = "server-1"
gated = ["execute", "deploy"]
unknown_tools = "ask"
ceiling = "{ceiling}"

[workspace]
name = "ws"
root = "{root}"

[tools.execute]
shell = "command"
[tools.read_file]
paths = ["path"]
[tools.write_file]
paths = ["path"]
writes = true
content = "content"
[tools.deploy]

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "two-man-deploy"
effect = "ask"
mandatory = true
tool = "deploy"
roles = ["ops"]
approvals = 2
expires = "1h"
"""


class Clock:
    def __init__(self) -> None:
        import time

        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@dataclass
class Served:
    url: str
    gate: Gate
    clock: Clock
    admin: str
    alice: str  # ops
    bob: str  # ops
    carol: str  # no roles
    agent: str

    def client(self, token: str | None = None, **kwargs: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]


def serve(tmp_path: Path, *, ceiling: str = "full", long_poll_max: float = 60.0,
          signing_key: SigningKey | None = None) -> Iterator[Served]:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    clock = Clock()
    policy = Policy.from_toml(SERVER_POLICY.format(root=root, ceiling=ceiling),
                              source="server.toml")
    gate = Gate(policy, SqliteStore(tmp_path / "server.db"), clock=clock,
                signing_key=signing_key, issuer="https://signoff.test")
    tokens = {name: gate.add_user(name, roles=roles, kind=kind)[1] for name, roles, kind in [
        ("root", ["ops"], "admin"), ("alice", ["ops"], "approver"), ("bob", ["ops"], "approver"),
        ("carol", [], "approver"), ("bot", [], "agent")]}
    app = create_app(gate, ServerSettings(port=0, long_poll_max=long_poll_max), feed_poll=0.2)
    with ServerThread(app) as server:
        yield Served(url=server.url, gate=gate, clock=clock, admin=tokens["root"],
                     alice=tokens["alice"], bob=tokens["bob"], carol=tokens["carol"],
                     agent=tokens["bot"])
    gate.store.close()




def propose_make(served: Any, thread: str, *, call_id: str = "make-1") -> str:
    """A gated shell call that asks one approver; its request id."""
    with served.client(served.agent) as agent:
        answer = agent.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "make build"}, "call_id": call_id,
            "context": {"thread_id": thread}}).json()
    assert answer["status"] == "pending", answer
    return str(answer["request_id"])


def propose_deploy(served: Any, thread: str) -> str:
    """A deploy: mandatory, two approvals from ops, expires in an hour."""
    with served.client(served.agent) as agent:
        answer = agent.post("/api/v1/calls", json={
            "tool": "deploy", "args": {"env": "prod"}, "call_id": "deploy-1",
            "context": {"thread_id": thread}}).json()
    assert answer["status"] == "pending", answer
    return str(answer["request_id"])
