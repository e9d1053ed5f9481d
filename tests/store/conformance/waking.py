"""Wake-ups: a waiter hears a commit promptly, never misses one between its token and its
wait, and times out when nothing happens."""

from __future__ import annotations

import threading
import time

import pytest

from signoff.store.base import Store

from .harness import Base, append_and_notify, commit_later, warm


class WakingContract(Base):
    """Wake-ups."""

    @pytest.mark.usefixtures("long_slice")
    def test_commit_in_another_thread_wakes_a_waiter_promptly(self, store: Store) -> None:
        warm(store)
        lag = commit_later(store, "req_w", 0.2)
        assert lag < 2.0

    @pytest.mark.usefixtures("long_slice")
    def test_a_commit_between_token_and_wait_is_not_missed(self, store: Store) -> None:
        warm(store)
        since = store.change_token()
        thread = threading.Thread(target=lambda: append_and_notify(store, "req_m"))
        thread.start()
        thread.join()
        # The commit is heard before the wait begins (on a loaded machine a notification can take
        # longer than the assertion below allows; that lag is not what this test is about).
        deadline = time.monotonic() + 10.0
        while store.change_token() == since:
            assert time.monotonic() < deadline, "the commit was never heard"
            time.sleep(0.01)
        started = time.monotonic()
        store.wait("req_m", timeout=60.0, since=since)
        # A wait that ignored ``since`` would sleep until the next change, or its re-read slice.
        assert time.monotonic() - started < 0.5

    def test_wait_without_change_times_out(self, store: Store) -> None:
        warm(store)
        started = time.monotonic()
        store.wait("req_none", timeout=0.3, since=store.change_token())
        elapsed = time.monotonic() - started
        assert 0.25 <= elapsed < 1.5
