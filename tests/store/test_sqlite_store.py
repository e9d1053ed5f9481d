"""What SQLite does its own way, beside the contract (``test_conformance``): another
connection's commit is seen by polling ``PRAGMA data_version``."""

from __future__ import annotations

import threading
import time

from conformance.harness import append

from backdoor import raw
from signoff.store.base import Store


def test_sqlite_commit_by_another_connection_wakes_a_waiter(sqlite_store: Store) -> None:
    """SQLite's cross-process wake-up: PRAGMA data_version polling."""
    store = sqlite_store
    append(store, 1)
    since = store.change_token()
    timer = threading.Timer(0.2, _raw_append, args=(store,))
    started = time.monotonic()
    timer.start()
    store.wait("req_x", timeout=5.0, since=since)
    timer.join()
    assert time.monotonic() - started < 0.2 + 0.5


def _raw_append(store: Store) -> None:
    with raw(store) as conn:
        conn.execute("INSERT INTO threads (id, review_mode, updated_at) VALUES ('z', 'auto', 1)")
