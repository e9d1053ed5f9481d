"""The reads an adapter takes of a thread, as Gate methods: what a paused run is shown,
and whether its thread still waits. They are the same reads over HTTP
(``signoff.client.Client``), so an adapter needs no store of its own
(``signoff.kernel.protocol``)."""

from __future__ import annotations

from collections.abc import Callable

from signoff.model import ApprovalRequest
from signoff.store.base import Store
from signoff.store.recall import ThreadMemory


class ThreadReads:
    store: Store

    def thread_memory(self, thread_id: str, *, fresh: bool = False) -> ThreadMemory:
        """The thread's mode, rejections, grants and pending requests (``fresh``: read now,
        not as remembered)."""
        return self.store.thread_memory(thread_id, fresh=fresh)

    def pending_on_thread(self, thread_id: str) -> list[ApprovalRequest]:
        return self.store.pending_on_thread(thread_id)

    def thread_requests(self, thread_id: str, *, limit: int = 500) -> list[ApprovalRequest]:
        """The thread's requests, newest first."""
        return self.store.list_requests(thread_id=thread_id, limit=limit)

    def on_close(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when the gate's store closes (a store that cannot say: never)."""
        register = getattr(self.store, "on_close", None)
        if callable(register):
            register(hook)
