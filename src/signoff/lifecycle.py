"""The one table of legal moves of an approval request (DESIGN §3).

Every status change in every store goes through ``check``: a move not in the
table is a bug or an attack, and is refused with ``illegal_transition``.

    pending ──┬── rejected / expired / cancelled / responded
              └── approved ──┬── executing ──┬── succeeded
                             │               ├── failed
                             │               └── unknown ── succeeded / failed (reconciled)
                             ├── invalidated
                             └── cancelled
"""

from __future__ import annotations

from signoff.errors import Conflict
from signoff.model import RequestStatus as S

TRANSITIONS: dict[S, frozenset[S]] = {
    S.PENDING: frozenset({S.APPROVED, S.REJECTED, S.EXPIRED, S.CANCELLED, S.RESPONDED}),
    S.APPROVED: frozenset({S.EXECUTING, S.INVALIDATED, S.CANCELLED}),
    S.EXECUTING: frozenset({S.SUCCEEDED, S.FAILED, S.UNKNOWN}),
    S.UNKNOWN: frozenset({S.SUCCEEDED, S.FAILED}),
    S.REJECTED: frozenset(),
    S.EXPIRED: frozenset(),
    S.CANCELLED: frozenset(),
    S.RESPONDED: frozenset(),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset(),
    S.INVALIDATED: frozenset(),
}

TERMINAL = frozenset(s for s, moves in TRANSITIONS.items() if not moves)
DECIDED = frozenset(S) - {S.PENDING}


def check(current: S, target: S) -> None:
    """Raise ``Conflict(illegal_transition)`` unless ``current → target`` is in the table."""
    if target not in TRANSITIONS[current]:
        raise Conflict(f"a request cannot go from {current.value} to {target.value}",
                       code="illegal_transition", status=current.value)
