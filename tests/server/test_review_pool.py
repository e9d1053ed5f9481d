"""Human decisions never wait behind model reviews (issue 42, item 6).

A real ``signoff serve`` on each backend, in ``auto`` review mode with the openai
reviewer pointed at a local chat-completions server that takes 5 s per answer. 45
calls are proposed at once; the reviewer's pool takes ``max_concurrent`` of them and
sends the rest to humans at once (``review_busy``), so an approver's decision on an
unrelated request, made while those reviews are in flight, completes within 1 s.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import procs
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "review"))
from chat_server import ChatServer, Reply

POLICY = """
[policy]
version = "review-pool"
default_review_mode = "auto"
gated = ["deploy"]

[workspace]
root = "{root}"

[tools.deploy]

[[rules]]
id = "drops-are-a-human-s"
effect = "ask"
mandatory = true
tool = "drop_table"

[review]
reviewer = "openai"
model = "slow-model"
base_url = "{base_url}"
timeout = 15
max_concurrent = 4
"""
SLOW = 5.0


@pytest.fixture(params=["sqlite", "postgres"])
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[procs.Live,
                                                                         ChatServer]]:
    with ChatServer(default=Reply.verdict("approve", "slowly", delay=SLOW)) as chat, \
            procs.database(request.param, tmp_path) as db:
        tokens = procs.prepare(request.param, db, tmp_path,
                               POLICY.replace("{base_url}", chat.base_url))
        server = procs.start_server(db, tmp_path, env={"OPENAI_API_KEY": "test-key"})
        live = procs.Live(backend=request.param, db=db, cwd=tmp_path, tokens=tokens,
                          server=server)
        try:
            yield live, chat
        finally:
            server.stop()


@pytest.mark.slow
def test_a_human_approval_completes_within_a_second_while_45_reviews_are_in_flight(
        rig: tuple[procs.Live, ChatServer]) -> None:
    live, chat = rig
    with live.client("bot") as bot:
        human = bot.post("/api/v1/calls", json={
            "tool": "drop_table", "args": {"table": "t"}, "call_id": "drop-1",
            "context": {"thread_id": "human"}}).json()
    assert human["status"] == "pending", human
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()

    def propose(n: int) -> None:
        with httpx.Client(base_url=live.url, timeout=60,
                          headers={"Authorization": f"Bearer {live.tokens['bot']}"}) as c:
            answer = c.post("/api/v1/calls", json={
                "tool": "deploy", "args": {"n": n}, "call_id": f"d{n}",
                "context": {"thread_id": f"t{n}"}}).json()
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=propose, args=(n,)) for n in range(45)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while chat.hits < 4 or len(answers) < 41:  # the pool is full, the rest answered
        assert time.monotonic() < deadline, (chat.hits, len(answers))
        time.sleep(0.02)
    with live.client("ann") as ann:
        start = time.monotonic()
        decided = ann.post(f"/api/v1/requests/{human['request_id']}/decisions",
                           json={"kind": "approve"})
        elapsed = time.monotonic() - start
    assert decided.status_code == 200, decided.text
    assert elapsed < 1.0, f"the approval took {elapsed:.2f} s behind the reviews"
    assert len(answers) < 45  # the reviews were still in flight
    for thread in threads:
        thread.join()
    busy = [a for a in answers if any("review slots are taken" in r["text"]
                                      for r in a["verdict"]["reasons"])]
    reviewed = [a for a in answers if a["status"] == "allowed"]
    others = [a for a in answers if a not in busy and a not in reviewed]
    assert len(busy) == 41 and len(reviewed) == 4, json.dumps(others)
    assert all(a["status"] == "pending" for a in busy)  # with humans, not approved
    assert chat.hits == 4
    with live.client("ann") as ann:  # the request keeps the reviewer's answer and its code
        detail = ann.get(f"/api/v1/requests/{busy[0]['request_id']}").json()
    assert detail["review"]["error"] == "review_busy" and not detail["review"]["approve"]
