"""``GET /api/v1/events``: server-sent events, one per audit event.

The SSE ``id`` is the audit index, so a browser reconnecting with
``Last-Event-ID`` is replayed exactly what it missed — from the log, which
every server shares. Subscribing happens before the replay read; events seen
twice are dropped by index. A comment line every 15 s keeps proxies from
closing an idle stream. The stream ends as soon as its credential no longer
holds (checked before sending, at most once a second, and with each comment).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from signoff.audit import AuditEvent
from signoff.server.feed import event_payload

if TYPE_CHECKING:
    from signoff.server.state import AppState

KEEPALIVE = 15.0
REPLAY_LIMIT = 1000
RECHECK = 1.0  # seconds: how stale "still signed in" may be when an event is sent


def _frame(event: AuditEvent) -> bytes:
    payload = json.dumps(event_payload(event), ensure_ascii=False)
    # No "event:" field: every frame reaches EventSource.onmessage; the kind is in the data.
    return f"id: {event.index}\ndata: {payload}\n\n".encode()


async def event_stream(state: AppState, request: Request, after: int | None,
                       allowed: Callable[[], Awaitable[bool]] | None = None
                       ) -> AsyncIterator[bytes]:
    queue = state.feed.subscribe()
    checked = time.monotonic()

    async def may_go_on(force: bool = False) -> bool:
        nonlocal checked
        if allowed is None or (not force and time.monotonic() - checked < RECHECK):
            return True
        checked = time.monotonic()
        return await allowed()

    try:
        last = state.feed.last_index if after is None else after
        yield b"retry: 1000\n: connected\n\n"
        if after is not None:
            missed = await run_in_threadpool(
                lambda: list(state.gate.audit_events(after=after, limit=REPLAY_LIMIT,
                                                    seal=False)))
            for event in missed:
                yield _frame(event)
                last = event.index
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE)
            except TimeoutError:
                if await request.is_disconnected() or not await may_go_on(force=True):
                    return
                yield b": keepalive\n\n"
                continue
            if item is None:  # the server is stopping
                return
            if item.index <= last:
                continue
            if not await may_go_on():
                return
            last = item.index
            yield _frame(item)
    finally:
        state.feed.unsubscribe(queue)
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)
