"""``signoff.adapters.proposing``: an allowed call the gate can answer from memory is judged
on the event loop, with no worker thread; anything that may touch the store goes to one.
Every call is judged and audited either way. A real gate on SQLite."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from quick_helpers import audited, quick_gate

from signoff import Gate
from signoff.adapters.proposing import propose
from signoff.kernel.outcomes import ProposalKind
from signoff.model import RunContext, ToolCall
from signoff.remote import Client


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    made, _ = quick_gate(tmp_path, monkeypatch)
    yield made
    made.close()


def counting_hop(hops: list[str]) -> Callable[..., Any]:
    async def hop(fn: Callable[..., Any], *args: Any) -> Any:
        hops.append(fn.__name__)
        return await asyncio.to_thread(fn, *args)
    return hop


def test_allowed_calls_on_a_thread_read_once_need_no_worker(gate: Gate) -> None:
    hops: list[str] = []
    context = RunContext(thread_id="t1", run_id="r1")

    async def calls() -> list[Any]:
        return [await propose(gate, ToolCall(id=f"c{i}", name="lookup", args={"q": i}),
                              context, hop=counting_hop(hops)) for i in range(4)]

    found = asyncio.run(calls())
    assert [p.kind for p in found] == [ProposalKind.ALLOWED] * 4
    assert len(hops) == 1  # the first call read the thread; memory answered the rest
    assert audited(gate) == [(f"c{i}", "t1") for i in range(4)]  # each judged and audited


def test_an_ask_goes_to_a_worker_and_makes_its_request(gate: Gate) -> None:
    hops: list[str] = []
    context = RunContext(thread_id="t1", run_id="r1")
    gate.start_run(context)  # the thread is read: an allowed call would need no worker
    proposal = asyncio.run(propose(gate, ToolCall(id="d1", name="deploy", args={}), context,
                                   hop=counting_hop(hops)))
    assert proposal.kind is ProposalKind.PENDING
    assert len(hops) == 1
    assert proposal.request is not None
    assert gate.get_request(proposal.request.id).call_id == "d1"


def test_a_remote_gate_answers_nothing_from_memory() -> None:
    client = Client("http://127.0.0.1:9", "token")  # never contacted
    try:
        assert client.propose_now(ToolCall(id="c1", name="lookup", args={}),
                                  RunContext(thread_id="t1")) is None
    finally:
        client.close()
