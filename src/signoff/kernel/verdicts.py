"""The audit of calls that changed nothing: allowed, denied and blocked verdicts, batched.

A verdict that creates no request and uses no grant changes no state, so its
audit event need not be on disk before the call proceeds — and waiting for an
fsync per allowed call would cost far more than the policy decision itself.
These events are queued and appended by a background thread in one
transaction every ``interval`` seconds (50 ms by default), and on ``flush()``,
``close()`` and interpreter exit. Each keeps the time of its verdict.

What this trades: a process that dies between a verdict and the next flush
loses those few allowed/denied/blocked events. Everything that changes state
— requests, decisions, grant uses, executions, results — is still committed
together with its audit event before anything acts on it. ``Gate(
verdict_audit="sync")`` writes verdict events synchronously instead.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from signoff.audit import AuditKind
from signoff.errors import ConfigurationError, StoreError
from signoff.store.base import Event, Store
from signoff.store.faults import classify

if TYPE_CHECKING:
    import logging

_LIVE: weakref.WeakSet[VerdictLog] = weakref.WeakSet()
MAX_FAILURES = 20


def _log() -> logging.Logger:
    """This module's logger (``logging`` is imported when there is something to say)."""
    import logging  # noqa: PLC0415

    return logging.getLogger("signoff.kernel.verdicts")


class VerdictLog:
    @classmethod
    def chosen(cls, store: Store, setting: str) -> VerdictLog | None:
        """The log for ``verdict_audit = setting``: ``batched`` (a log), ``sync`` (none)."""
        if setting not in ("batched", "sync"):
            raise ConfigurationError(f"verdict_audit must be 'batched' or 'sync', not "
                                     f"{setting!r}", code="invalid_setting")
        return cls(store) if setting == "batched" else None

    def __init__(self, store: Store, *, interval: float = 0.05) -> None:
        self.store = store
        self.interval = interval
        self._items: list[Event] = []
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        _LIVE.add(self)
        store.on_close(self.close)  # finish writing before the store's connections close

    def add(self, kind: AuditKind, *, at_us: int, actor: str | None,
            data: Mapping[str, Any]) -> None:
        with self._lock:
            self._items.append((kind, at_us, actor, data))
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="signoff-verdicts",
                                                daemon=True)
                self._thread.start()

    def flush(self) -> int:
        """Append every queued event now; how many."""
        with self._flushing:
            with self._lock:
                items, self._items = self._items, []
            if not items:
                return 0
            try:
                with self.store.transaction() as tx:
                    tx.append_audits(items)
            except Exception:
                with self._lock:  # keep them for the next attempt, in order
                    self._items[:0] = items
                raise
            return len(items)

    def pending(self) -> int:
        with self._lock:
            return len(self._items)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        try:
            self.flush()
        except Exception:  # a store that is already unusable keeps nothing: say so
            _log().warning("%d verdict audit event(s) could not be written at close",
                        self.pending(), exc_info=True)

    def _run(self) -> None:
        idle = failures = 0
        while not self._closed:
            self._wake.wait(self.interval)
            try:
                idle = 0 if self.flush() else idle + 1
                failures = 0
            except Exception as exc:  # the database is unreachable: keep the events, retry
                failures += 1
                idle = 0
                if failures == 1:  # a typed store fault in a line; a bug with its traceback
                    typed = classify(exc)
                    if not (isinstance(typed, StoreError) and typed.reported):
                        _log().warning("cannot write %d verdict audit event(s) yet; retrying",
                                    self.pending(), exc_info=not isinstance(typed, StoreError))
                if failures >= MAX_FAILURES:  # the store is gone (closed): stop; the events
                    with self._lock:          # stay queued for flush() / exit
                        self._thread = None
                    return
            if idle * self.interval >= 1.0:  # quiet for a second: let the thread go
                with self._lock:
                    if not self._items:
                        self._thread = None
                        return


@atexit.register
def _flush_all() -> None:
    for verdicts in list(_LIVE):
        with contextlib.suppress(Exception):  # the store may be closed already at exit
            verdicts.flush()
