"""Reading a request as it stands, and waiting for it to change (a part of the gate).

The server's clock judges expiry whoever asks: a pending request met past its expiry
is expired on the spot (``settled``), with its audit event, before it is answered.
Waiting re-reads only when the store says something may have changed (an in-process
commit, ``PRAGMA data_version`` for other SQLite processes, ``LISTEN/NOTIFY`` on
PostgreSQL), never in a tight loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from signoff.errors import NotFound
from signoff.kernel import lifecycle
from signoff.kernel.outcomes import Outcome, outcome_of
from signoff.model import ApprovalRequest, RequestStatus
from signoff.store.base import Store


class Reader:
    """Requests read for an answer: one by id, as it stands now, or waited on."""

    def __init__(self, store: Store, *, clock: Callable[[], float]) -> None:
        self.store = store
        self.clock = clock

    def get(self, request_id: str) -> ApprovalRequest:
        """The request as stored, or ``NotFound``."""
        request: ApprovalRequest | None = self.store.get_request(request_id)
        if request is None:
            raise NotFound(f"no approval request {request_id!r}", code="not_found")
        return request

    def now(self, request_id: str) -> ApprovalRequest:
        """The request as it stands, a pending one past its expiry expired first."""
        return self.settled(self.get(request_id))

    def settled(self, request: ApprovalRequest) -> ApprovalRequest:
        """``request`` as read, or expired first if it is pending past its expiry."""
        if request.status is RequestStatus.PENDING and request.expires_at is not None \
                and self.clock() >= request.expires_at:
            return self.expire(request.id)
        return request

    def expire(self, request_id: str) -> ApprovalRequest:
        """Expire ``request_id`` under its lock if it is still pending past its expiry."""
        now = self.clock()
        with self.store.transaction() as tx:
            locked = tx.get_request(request_id, lock=True)
            assert locked is not None
            if locked.status is RequestStatus.PENDING and locked.expires_at is not None \
                    and now >= locked.expires_at:
                return lifecycle.transition(
                    tx, locked, RequestStatus.EXPIRED, now=now, actor="clock",
                    outcome_code="expired")
            return locked

    def outcome(self, request_id: str) -> Outcome:
        """The outcome of a request now, without running anything."""
        return outcome_of(self.now(request_id))

    def wait(self, request_id: str, *, timeout: float) -> Outcome:
        """Block until the request is decided (or expires, or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while True:
            since = self.store.change_token()
            request = self.now(request_id)
            if request.status is not RequestStatus.PENDING:
                return outcome_of(request)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return outcome_of(request)
            limit = remaining
            if request.expires_at is not None:
                limit = min(limit, max(0.0, request.expires_at - self.clock()) + 0.001)
            self.store.wait(request_id, timeout=limit, since=since)
