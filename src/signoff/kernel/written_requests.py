"""Requests this process wrote, as it wrote them: a guess a decision may write on.

A decision reads its request under the row's lock before it writes; on PostgreSQL that
read is a round trip of its own. When this process proposed the request and nothing has
moved it since, the process knows the row already. A decision then goes unread, in one
statement whose compare-and-set requires, inside the database, the row at the version
written here, still pending, with the arguments written here, and the approver stored as
they sign (``Tx.expect_as_known``). If anything differs, nothing is written and the
decision is taken again on the row read under its lock. So what is kept here is never
trusted: it only saves a read when the database confirms it.

Each entry is used once (a decision moves its request) and the oldest go first; a request
with large arguments is not kept, so the memory stays small (``LIMIT`` × ``ARGS_MAX``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from signoff.model import ApprovalRequest, RequestStatus

LIMIT = 1024
ARGS_MAX = 16 * 1024  # characters of arguments (original and approved) a kept request holds


class WrittenRequests:
    """Pending requests as this process wrote them, the newest ``LIMIT``; thread-safe."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._rows: OrderedDict[str, ApprovalRequest] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, request: ApprovalRequest) -> None:
        if request.status is not RequestStatus.PENDING \
                or len(request.args) + len(request.approved_args or "") > ARGS_MAX:
            return
        with self._lock:
            self._rows[request.id] = request
            if len(self._rows) > self._limit:
                self._rows.popitem(last=False)

    def take(self, request_id: str) -> ApprovalRequest | None:
        """The request as written here, forgotten now (whatever the decision finds)."""
        with self._lock:
            return self._rows.pop(request_id, None)

    def __len__(self) -> int:
        return len(self._rows)
