"""One thread per server watches the store and tells the event loop what changed.

The audit log is the change feed: every state change commits with an audit
event, and events carry a gap-free index. The watcher waits on the store
(``change_token``/``wait``: in-process commits at once, other processes by
``PRAGMA data_version`` on SQLite or LISTEN/NOTIFY on PostgreSQL, so a
decision taken on another server is seen here), reads the events after the
last index it saw — only the newest index while no stream is open — and hands
them to the loop. Long-polls wait on a
generation counter; SSE subscribers get the events themselves, and a client
that reconnects with ``Last-Event-ID`` is replayed what it missed from the
log, not from memory. A bounded re-check every ``poll`` seconds catches
changes that send no notification.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from signoff.audit import AuditEvent
from signoff.store.outage import Streak

log = logging.getLogger("signoff.server")
QUEUE_LIMIT = 1000


class Watched(Protocol):
    """What the feed reads: the kernel's ``Records`` (or, in a test, a store)."""

    def audit_head(self) -> tuple[int, str]: ...
    def audit_events(self, *, after: int = 0, limit: int | None = None,
                     seal: bool = True) -> Iterator[AuditEvent]: ...
    def change_token(self) -> object: ...
    def wait(self, key: str, *, timeout: float, since: object = None) -> None: ...


class ChangeFeed:
    def __init__(self, store: Watched, *, poll: float = 1.0) -> None:
        self.store = store
        self.poll = poll
        self.generation = 0
        self.last_index = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None
        self._subscribers: set[asyncio.Queue[AuditEvent | None]] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.listeners: list[Callable[[list[AuditEvent]], None]] = []
        self.draining = False  # the server is stopping: long-polls answer at once

    # ---- lifecycle (called from the event loop) --------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        self.last_index = self.store.audit_head()[0]
        self._thread = threading.Thread(target=self._watch, name="signoff-feed", daemon=True)
        self._thread.start()

    def drain(self) -> None:
        """The server is stopping: end every event stream and wake every long-poll now, so
        each is answered before the connections close (``draining`` tells a long-poll to
        return what it has)."""
        self.draining = True
        for queue in list(self._subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
        if self._changed is not None:
            self._changed.set()

    def stop(self) -> None:
        self._stop.set()
        for queue in list(self._subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ---- the watcher thread -------------------------------------------------------------------

    def _watch(self) -> None:
        failures = Streak(log, "change feed")
        while not self._stop.is_set():
            try:
                since = self.store.change_token()
                events, newest = self._read()
                if newest > self.last_index:
                    self.last_index = newest
                    for listener in self.listeners:
                        listener(events)
                    assert self._loop is not None
                    self._loop.call_soon_threadsafe(self._publish, events)
                self.store.wait("*", timeout=self.poll, since=since)
                failures.ok()
            except Exception as exc:  # the database went away: keep trying, never kill the server
                failures.failed(exc)  # logged once (signoff.store.outage)
                self._stop.wait(self.poll)

    def _read(self) -> tuple[list[AuditEvent], int]:
        """The events after ``last_index`` and the newest index. With no subscriber nobody
        reads the events themselves (long-polls and listeners only need to know something
        changed): the head's index alone is read. A subscriber that came meanwhile is
        given them; one that comes after the head was read is owed only what follows."""
        if not self._subscribers:
            newest = self.store.audit_head()[0]
            if not self._subscribers or newest <= self.last_index:
                return [], newest
        events = list(self.store.audit_events(after=self.last_index, seal=False))
        return events, (events[-1].index if events else self.last_index)

    def _publish(self, events: list[AuditEvent]) -> None:
        self.generation += 1
        assert self._changed is not None
        self._changed.set()
        self._changed = asyncio.Event()
        for queue in list(self._subscribers):
            for event in events:
                try:
                    queue.put_nowait(event)
                except asyncio.QueueFull:  # a stalled client: drop it; it reconnects and replays
                    self._subscribers.discard(queue)
                    break

    # ---- what handlers use --------------------------------------------------------------------

    async def changed(self, since: int, timeout: float) -> None:
        """Return once the generation moves past ``since`` or ``timeout`` seconds pass."""
        if self.generation != since or self._changed is None or self.draining:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    def subscribe(self) -> asyncio.Queue[AuditEvent | None]:
        queue: asyncio.Queue[AuditEvent | None] = asyncio.Queue(QUEUE_LIMIT)
        if self.draining:  # a stream opened as the server stops ends at once
            queue.put_nowait(None)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[AuditEvent | None]) -> None:
        self._subscribers.discard(queue)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)


def event_payload(event: AuditEvent) -> dict[str, Any]:
    """What an SSE client sees of an audit event: enough to refresh the right view."""
    data = json.loads(event.data)
    if not isinstance(data, dict):
        data = {}
    return {"index": event.index, "kind": event.kind, "request_id": event.request_id,
            "actor": event.actor, "at_us": event.at_us,
            "thread_id": data.get("thread_id"), "status": data.get("to")}
