"""SQLite's writers of one process queue in the order they came (``signoff.store.fifo``)."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest

from signoff.store.fifo import FifoLock
from signoff.store.sqlite import SqliteStore


def _queued(lock: FifoLock, n: int) -> list[int]:
    """``n`` threads ask for ``lock`` one after another while it is held; the order they
    got it in."""
    order: list[int] = []
    threads = []
    lock.acquire()
    for i in range(n):
        def take(i: int = i) -> None:
            lock.acquire()
            order.append(i)
            lock.release()
        thread = threading.Thread(target=take)
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 5
        while len(lock._waiters) < i + 1 and time.monotonic() < deadline:  # it is waiting
            time.sleep(0.001)
    lock.release()
    for thread in threads:
        thread.join(5)
    return order


def test_waiters_get_the_lock_in_arrival_order() -> None:
    assert _queued(FifoLock(), 24) == list(range(24))


def test_the_releasing_thread_cannot_jump_the_queue() -> None:
    lock = FifoLock()
    lock.acquire()
    got: list[str] = []
    waiter = threading.Thread(target=lambda: (lock.acquire(), got.append("waiter"),
                                              lock.release()))
    waiter.start()
    while not lock._waiters:
        time.sleep(0.001)
    lock.release()
    lock.acquire()  # at once again: behind the waiter, not before it
    got.append("releaser")
    lock.release()
    waiter.join(5)
    assert got == ["waiter", "releaser"]


def test_an_unheld_release_is_refused() -> None:
    with pytest.raises(RuntimeError):
        FifoLock().release()


def test_a_waiter_interrupted_by_a_signal_leaves_the_lock_usable() -> None:
    lock = FifoLock()
    holder_done = threading.Event()

    def hold() -> None:
        lock.acquire()
        holder_done.wait(5)
        lock.release()

    holder = threading.Thread(target=hold)
    holder.start()
    while not lock.locked():
        time.sleep(0.001)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(KeyboardInterrupt):
            lock.acquire()  # the main thread waits, and is interrupted
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert list(lock._waiters) == []
    holder_done.set()
    holder.join(5)
    assert not lock.locked()
    lock.acquire()
    lock.release()


def test_sqlite_writers_of_one_process_commit_in_the_order_they_came(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "fifo.db")
    try:
        first = store.transaction()
        first.__enter__()
        order: list[int] = []
        threads = []
        for i in range(12):
            def write(i: int = i) -> None:
                with store.transaction() as tx:
                    tx.append_audit("w", at_us=i, request_id=None, actor=f"w{i}", data={})
                    order.append(i)
            thread = threading.Thread(target=write)
            thread.start()
            threads.append(thread)
            deadline = time.monotonic() + 5
            while len(store._writer._waiters) < i + 1 and time.monotonic() < deadline:
                time.sleep(0.001)
        first.__exit__(None, None, None)
        for thread in threads:
            thread.join(10)
        assert order == list(range(12))
        assert [e.actor for e in store.audit_events()] == [f"w{i}" for i in range(12)]
    finally:
        store.close()
