"""The change feed reads the events themselves only for open streams.

Long-polls and the notifier only need to know that something changed; with no stream
open, the watcher reads the audit head's index instead of every event (each server's
watcher sees every server's events, so that read is per event, times the servers).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from signoff.audit import AuditEvent
from signoff.kernel.gate import Gate
from signoff.kernel.records import Records
from signoff.model import RunContext, ToolCall
from signoff.policy import Policy
from signoff.server.feed import ChangeFeed
from signoff.store.base import Store


class Counting:
    """The store, counting the watcher's reads of events."""

    def __init__(self, store: Records) -> None:
        self.store = store
        self.event_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def audit_events(self, *args: Any, **kwargs: Any) -> Any:
        self.event_reads += 1
        return self.store.audit_events(*args, **kwargs)


def _propose(gate: Gate, n: int) -> str:
    proposal = gate.propose(ToolCall(id=f"c-{n}", name="deploy", args={"n": n}),
                            RunContext(thread_id=f"t-{n}"))
    assert proposal.request is not None
    return proposal.request.id


async def _until(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the feed never caught up"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("streams", [0, 1])
def test_the_feed_reads_events_only_for_open_streams(policy: Policy, store: Store,
                                                     streams: int) -> None:
    gate = Gate(policy, store)
    counting = Counting(gate.records)
    woken: list[list[AuditEvent]] = []

    async def run() -> list[AuditEvent]:
        feed = ChangeFeed(counting, poll=0.05)  # type: ignore[arg-type]
        feed.listeners.append(woken.append)
        feed.start()
        try:
            queue = feed.subscribe() if streams else None
            generation = feed.generation
            for n in range(3):
                await asyncio.to_thread(_propose, gate, n)
            store.seal()
            head = store.audit_head()[0]
            await _until(lambda: feed.last_index == head and feed.generation > generation)
            got: list[AuditEvent] = []
            while queue is not None and len(got) < 3:  # published on the loop, a bit later
                item = await asyncio.wait_for(queue.get(), 10)
                assert item is not None
                got.append(item)
            return got
        finally:
            feed.stop()

    got = asyncio.run(run())
    assert woken, "the listeners (the notifier) were never woken"
    if streams:
        assert [e.kind for e in got].count("request.created") == 3
        assert counting.event_reads > 0
    else:
        assert got == [] and counting.event_reads == 0
        assert all(events == [] for events in woken)


def test_a_stream_opened_later_gets_what_follows(policy: Policy, store: Store) -> None:
    gate = Gate(policy, store)

    async def run() -> tuple[str, str]:
        feed = ChangeFeed(gate.records, poll=0.05)
        feed.start()
        try:
            await asyncio.to_thread(_propose, gate, 0)
            store.seal()
            head = store.audit_head()[0]
            await _until(lambda: feed.last_index == head)
            queue = feed.subscribe()  # after the first event: owed what follows only
            second = await asyncio.to_thread(_propose, gate, 1)
            store.seal()
            while True:  # what was read before it subscribed may reach it: a stream skips
                item = await asyncio.wait_for(queue.get(), 10)  # those (``last``)
                assert item is not None
                if item.index > head:
                    return str(item.request_id), second
        finally:
            feed.stop()

    got, second = asyncio.run(run())
    assert got == second
