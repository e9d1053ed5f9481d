"""A lock that its waiters get in the order they asked: SQLite's writers of one process.

``threading.Lock`` promises no order. When it is released, whichever thread runs first
takes it, often the one that released it, back for its next transaction. Under a burst
of writers a few lose again and again, and their latency is the p99. ``FifoLock`` hands
the lock from holder to the longest waiter directly: each writer waits behind those
already waiting, and no longer.
"""

from __future__ import annotations

import threading
from collections import deque


class FifoLock:
    """``acquire``/``release`` in arrival order; not re-entrant."""

    __slots__ = ("_held", "_mutex", "_waiters")

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque[threading.Lock] = deque()

    def acquire(self) -> None:
        with self._mutex:
            if not self._held:  # free, so nobody waits either: the fast path
                self._held = True
                return
            waiter = threading.Lock()
            waiter.acquire()
            self._waiters.append(waiter)
        try:
            waiter.acquire()  # released by ``release``: the lock is ours from then on
        except BaseException:  # interrupted while waiting (a signal in the main thread)
            with self._mutex:
                try:
                    self._waiters.remove(waiter)
                except ValueError:  # it was handed to us meanwhile: hand it on
                    pass
                else:
                    raise
            self.release()
            raise

    def release(self) -> None:
        with self._mutex:
            if not self._held:
                raise RuntimeError("release of an unheld FifoLock")
            if self._waiters:
                self._waiters.popleft().release()  # still held: by the next waiter now
            else:
                self._held = False

    def hand_on(self) -> bool:
        """Give the held lock to the longest waiter, if there is one (``True``); else keep
        holding it (``False``). What the holder leaves open, the next one finds."""
        with self._mutex:
            if not self._waiters:
                return False
            self._waiters.popleft().release()
            return True

    def locked(self) -> bool:
        return self._held
