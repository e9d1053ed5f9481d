"""Webhooks from real ``signoff serve`` processes to a real receiver on loopback, which checks
each one with the Standard Webhooks library's verifier — on SQLite and PostgreSQL, with the
receiver down for a while, the server SIGKILLed mid-delivery, and two servers on one
PostgreSQL database."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import procs
import pytest
from receiver import Receiver

from signoff.notify.config import new_secret

NOTIFY = """
[notify]
allow_private_targets = true  # the receiver is on loopback
retry_base = {retry}
retry_max = 1
timeout = 2

[notify.webhooks.ops]
url = "{url}"
secret_env = "OPS_WEBHOOK_SECRET"
"""


@dataclass
class Rig:
    backend: str
    db: str
    cwd: Path
    tokens: dict[str, str]
    receiver: Receiver
    servers: list[procs.Server]

    def start(self) -> procs.Server:
        server = procs.start_server(self.db, self.cwd,
                                    env={"OPS_WEBHOOK_SECRET": self.receiver.secret})
        self.servers.append(server)
        return server

    def client(self, user: str, server: procs.Server | None = None) -> httpx.Client:
        return (server or self.servers[0]).client(self.tokens[user])


@contextlib.contextmanager
def rig(backend: str, directory: Path, *, retry: float = 0.2) -> Iterator[Rig]:
    receiver = Receiver(new_secret())
    with procs.database(backend, directory) as db:
        tokens = procs.prepare(backend, db, directory)
        with (directory / "signoff.toml").open("a", encoding="utf-8") as fh:
            fh.write(NOTIFY.format(url=receiver.url, retry=retry))
        made = Rig(backend=backend, db=db, cwd=directory, tokens=tokens, receiver=receiver,
                   servers=[])
        try:
            made.start()
            yield made
        finally:
            for server in made.servers:
                server.stop()
            receiver.close()


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    with rig(request.param, tmp_path) as made:
        yield made


def ask(agent: httpx.Client, call_id: str, thread: str = "t-1") -> str:
    answer = agent.post("/api/v1/calls", json={
        "tool": "execute", "args": {"command": f"make {call_id}"}, "call_id": call_id,
        "context": {"thread_id": thread}})
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "pending", answer.text
    return str(answer.json()["request_id"])


def decide(approver: httpx.Client, request_id: str, kind: str = "approve") -> None:
    body: dict[str, Any] = {"kind": kind}
    if kind == "reject":
        body["reason"] = "not now"
    answer = approver.post(f"/api/v1/requests/{request_id}/decisions", json=body)
    assert answer.status_code == 200, answer.text


@pytest.mark.slow
def test_a_request_s_life_reaches_the_receiver_signed_and_in_order(served: Rig) -> None:
    with served.client("bot") as bot, served.client("ann") as ann:
        approved = ask(bot, "a1")
        rejected = ask(bot, "a2", thread="t-2")
        decide(ann, approved)
        decide(ann, rejected, "reject")
        claim = bot.post(f"/api/v1/calls/{approved}/claim").json()
        done = bot.post(f"/api/v1/calls/{approved}/result",
                        json={"fencing_token": claim["fencing_token"], "result": "built"})
        assert done.status_code == 200, done.text
    served.receiver.wait_for(5)
    assert served.receiver.types_of(approved) == ["request.created", "request.decided",
                                                  "request.executed"]
    assert served.receiver.types_of(rejected) == ["request.created", "request.decided"]
    assert all(a.verified for a in served.receiver.arrivals), served.receiver.refused
    decided = next(a.payload["data"] for a in served.receiver.arrivals
                   if a.payload["type"] == "request.decided"
                   and a.payload["data"]["request_id"] == rejected)
    assert decided["status"] == "rejected"
    assert decided["decisions"][0]["approver"] == "ann"
    assert decided["decisions"][0]["reason"] == "not now"
    assert decided["url"] == f"{served.servers[0].url}/requests/{rejected}"
    metrics = httpx.get(served.servers[0].url + "/metrics").text
    assert 'signoff_deliveries{channel="webhook:ops",status="delivered"} 5.0' in metrics
    assert 'signoff_delivery_attempts_total{channel="webhook:ops",outcome="delivered"} 5.0' \
        in metrics
    assert "signoff_delivery_latency_seconds_count" in metrics


@pytest.mark.slow
def test_a_receiver_down_for_a_while_gets_everything_in_order(served: Rig) -> None:
    served.receiver.down()
    made: list[str] = []
    with served.client("bot") as bot, served.client("ann") as ann:
        for n in range(6):
            made.append(ask(bot, f"d{n}", thread=f"t-{n}"))
        for n, request_id in enumerate(made[:4]):
            decide(ann, request_id, "approve" if n % 2 else "reject")
        time.sleep(1.5)  # several failed attempts each
        with served.client("boss") as boss:
            log = boss.get("/api/v1/webhooks/deliveries", params={"status": "pending"}).json()
        assert log["deliveries"], "undelivered events wait in the log"
        assert max(d["attempts"] for d in log["deliveries"]) >= 2
        assert any("ConnectError" in (d["last_error"] or "") for d in log["deliveries"])
        served.receiver.up()  # the same port again
        served.receiver.wait_for(10)
        cancelled = bot.post(f"/api/v1/requests/{made[5]}/cancel", json={"reason": "gave up"})
        assert cancelled.status_code == 200, cancelled.text
    served.receiver.wait_for(11)
    for request_id in made[:4]:
        assert served.receiver.types_of(request_id) == ["request.created", "request.decided"]
    assert served.receiver.types_of(made[4]) == ["request.created"]
    assert served.receiver.types_of(made[5]) == ["request.created", "request.cancelled"]
    assert len(served.receiver.unique()) == 11


@pytest.mark.slow
def test_sigkill_mid_delivery_then_restart_loses_nothing(served: Rig) -> None:
    served.receiver.mode = "hang"
    with served.client("bot") as bot:
        first = ask(bot, "k1")
    assert served.receiver.hanging.wait(10), "the delivery is under way"
    server = served.servers[0]
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)
    served.receiver.mode = "ok"
    served.receiver.release.set()  # the cut-off attempt lands, but nobody hears the answer
    restarted = served.start()
    with served.client("bot", restarted) as bot:
        second = ask(bot, "k2", thread="t-2")
    served.receiver.wait_for(2)
    assert served.receiver.types_of(first) == ["request.created"]
    assert served.receiver.types_of(second) == ["request.created"]
    ids = [a.webhook_id for a in served.receiver.arrivals]
    # at least once: the attempt cut off by the kill landed, but its server never heard
    # so; the restarted server (same host: the dead holder's lease is freed at once) sends
    # it again, with the same id for the receiver to drop
    cut_off = served.receiver.arrivals[0].webhook_id
    assert ids.count(cut_off) == 2 and len(ids) == 3
    with restarted.client(served.tokens["boss"]) as boss:
        log = boss.get("/api/v1/webhooks/deliveries").json()["deliveries"]
    assert {d["status"] for d in log} == {"delivered"}
    assert len(log) == 2


@pytest.mark.slow
def test_two_servers_on_one_postgres_deliver_each_event_once(tmp_path: Path) -> None:
    with rig("postgres", tmp_path) as two:
        other = two.start()
        made: list[str] = []
        lock = threading.Lock()

        def agent(server: procs.Server, prefix: str) -> None:
            with two.client("bot", server) as bot, two.client("ann", server) as ann:
                for n in range(10):
                    request_id = ask(bot, f"{prefix}{n}", thread=f"{prefix}-{n}")
                    decide(ann, request_id)
                    with lock:
                        made.append(request_id)

        threads = [threading.Thread(target=agent, args=(s, p))
                   for s, p in ((two.servers[0], "a"), (other, "b"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        two.receiver.wait_for(40)
        time.sleep(1.0)  # a duplicate would have arrived by now
        ids = [a.webhook_id for a in two.receiver.arrivals]
        assert len(ids) == len(set(ids)) == 40, "each event once per endpoint"
        for request_id in made:
            assert two.receiver.types_of(request_id) == ["request.created", "request.decided"]
