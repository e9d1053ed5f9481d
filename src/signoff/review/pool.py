"""``ReviewPool``: the few threads model reviews run on, and nothing else does.

A review waits on a remote model for seconds; run on the server's shared worker
threads, a burst of them would leave a human's decision queued behind. Reviews
take a slot here instead, each on a thread of its own, and the caller waits at
most the review's deadline. There is no queue: when every slot is taken the call
goes to a human at once (``review_busy``), because a review that waits its turn
only delays the human who will decide anyway. A slot is freed when its thread
ends, not when its caller gives up, so an endpoint that never answers holds at
most ``size`` threads however many calls it is sent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")

DEFAULT_SIZE = 8


class ReviewPool:
    """At most ``size`` reviews at a time, each on its own daemon thread."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        if size < 1:
            raise ValueError("a review pool needs at least one slot")
        self.size = size
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._running = 0

    @property
    def running(self) -> int:
        """Reviews whose threads have not ended (late ones included)."""
        with self._lock:
            return self._running

    def acquire(self) -> bool:
        """Take a slot if one is free; never waits."""
        if not self._slots.acquire(blocking=False):
            return False
        with self._lock:
            self._running += 1
        return True

    def release(self) -> None:
        """Give back a slot taken with ``acquire`` and not handed to ``start``."""
        with self._lock:
            self._running -= 1
        self._slots.release()

    def start(self, fn: Callable[[], T]) -> Future[T]:
        """Run ``fn`` on a new thread under the slot the caller acquired; the slot is
        released when ``fn`` returns or raises, whoever still waits for it."""
        future: Future[T] = Future()

        def run() -> None:
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn())
                    except BaseException as exc:  # handed to the waiter, if any
                        future.set_exception(exc)
            finally:
                self.release()

        try:
            threading.Thread(target=run, name="signoff-review", daemon=True).start()
        except BaseException:
            self.release()
            raise
        return future
