"""Whether the database answers: one log line when it goes away, one when it comes back,
and a prompt ``store_unavailable`` meanwhile.

A stopped PostgreSQL refuses connections at once, but a pool waiting for one holds
every request for its whole timeout and then calls it busy. ``Outage`` learns from
failures, and checks each with a direct connection: when that fails too (refused,
gone, shutting down) the outage begins — logged once — and every caller is answered
``store_unavailable`` at once (the error is marked ``reported``, so nobody logs it
again), while one caller twice a second tries a direct connection; the first that succeeds
ends the outage, logged once. When the direct connection succeeds the database
answers: a pool or lock that ran out of time stays ``store_busy``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from signoff.errors import StoreError
from signoff.store.faults import classify

log = logging.getLogger("signoff.store")
PROBE_EVERY = 0.5  # seconds between direct connections during an outage


class Outage:
    """``probe()`` connects directly and returns ``None`` when the database answers, else
    the reason in a line; ``on_back()`` runs when an outage ends (the pool drops the
    connections the outage broke)."""

    def __init__(self, where: str, probe: Callable[[], str | None],
                 on_back: Callable[[], None]) -> None:
        self.where = where
        self._probe = probe
        self._on_back = on_back
        self._lock = threading.Lock()
        self._since: float | None = None  # monotonic time the outage began
        self._probed = 0.0

    @property
    def down(self) -> bool:
        return self._since is not None

    def error(self) -> StoreError:
        """What a caller is told during an outage (already logged: ``reported``)."""
        error = StoreError("the database is unavailable; nothing was written",
                           code="store_unavailable")
        error.reported = True
        return error

    def check(self) -> None:
        """Before taking a connection: during an outage raise at once — but twice a second,
        try a direct connection, and go on if it succeeds."""
        if self._since is None:
            return
        with self._lock:
            if self._since is None:
                return
            now = time.monotonic()
            if now - self._probed < PROBE_EVERY:
                raise self.error()
            self._probed = now
        if self._probe() is not None:
            raise self.error()
        self.alive()

    def confirm(self) -> bool:
        """After a failure that may mean the database is gone: whether it is (the outage
        begins, logged once) or still answers (the failure was the connection's alone)."""
        reason = self._probe()
        if reason is None:
            self.alive()
            return False
        with self._lock:
            if self._since is not None:
                return True
            self._since = self._probed = time.monotonic()
        log.warning("database unavailable: %s (%s); requests are answered 503 "
                    "store_unavailable until it is back", self.where, reason)
        return True

    def alive(self) -> None:
        """The database answered: an outage, if there was one, is over."""
        with self._lock:
            if self._since is None:
                return
            lasted = time.monotonic() - self._since
            self._since = None
        try:
            self._on_back()
        finally:
            log.warning("database back: %s answers again, after %.1f s", self.where, lasted)


class Streak:
    """A background worker's failures in a row (the sealer, the change feed, the notifier):
    the first is logged — a typed store fault in one line, an outage the store reported
    not at all, anything else with its traceback — and the rest are not, until a pass
    succeeds."""

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self.log = logger
        self.what = what
        self.failing = False

    def failed(self, exc: BaseException) -> None:
        if self.failing:
            return
        self.failing = True
        typed = classify(exc)
        if isinstance(typed, StoreError):
            if not typed.reported:
                self.log.warning("%s: %s; retrying", self.what, typed.message)
        else:
            self.log.error("%s failed; retrying", self.what, exc_info=exc)

    def ok(self) -> None:
        self.failing = False
