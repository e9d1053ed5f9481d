"""The one table of legal moves of an approval request (docs/kernel.md).

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

from typing import TYPE_CHECKING, Any

from signoff.audit import AuditKind, to_us
from signoff.errors import Conflict
from signoff.model import ApprovalRequest
from signoff.model import RequestStatus as S

if TYPE_CHECKING:
    from signoff.store.base import Approvals, Event, Tx

_AUDITED = ("outcome_code", "outcome_reason", "executor")
# The audit event of a move to each status (``request.<status>``).
_MOVED: dict[S, AuditKind] = {
    S.APPROVED: AuditKind.REQUEST_APPROVED, S.REJECTED: AuditKind.REQUEST_REJECTED,
    S.EXPIRED: AuditKind.REQUEST_EXPIRED, S.CANCELLED: AuditKind.REQUEST_CANCELLED,
    S.RESPONDED: AuditKind.REQUEST_RESPONDED, S.EXECUTING: AuditKind.REQUEST_EXECUTING,
    S.SUCCEEDED: AuditKind.REQUEST_SUCCEEDED, S.FAILED: AuditKind.REQUEST_FAILED,
    S.UNKNOWN: AuditKind.REQUEST_UNKNOWN, S.INVALIDATED: AuditKind.REQUEST_INVALIDATED,
}

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


def transition(tx: Tx, request: ApprovalRequest, target: S, *, now: float, actor: str | None,
               **changes: Any) -> ApprovalRequest:
    """Compare-and-set ``request`` to ``target`` on its version, with its audit event, in
    ``tx``: the one way every part of signoff moves a request."""
    check(request.status, target)
    moved = tx.update_request(request, status=target, updated_at=now, **changes)
    if moved is None:
        raise Conflict(f"request {request.id} changed underneath", code="already_decided",
                       status=request.status.value)
    record_move(tx, request.id, request.status, target, now=now, actor=actor, changes=changes)
    return moved


def claim(tx: Tx, request: ApprovalRequest, *, now: float, actor: str,
          lease_until: float, last: bool = False, approvals: Approvals | None = None) -> int:
    """``approved → executing`` for ``actor``; returns the fencing token.

    The token is the number of the claim's own audit event (``Tx.claim_request``): unique,
    and increasing between claims of one request, which its row lock orders — so no
    counter row has to be written (one statement and one page less in every claim). The
    event is appended with the move (one statement on PostgreSQL) so its number is the
    row's token; a failed compare-and-set rolls both back. ``last``: the caller writes
    nothing after it in ``tx`` — PostgreSQL then commits it in the same round trip, and
    it stays committed whatever the rest of the ``with`` block does. ``approvals``: the
    row was read, not held (``Store.request_to_run``); the claim requires it as read."""
    check(request.status, S.EXECUTING)
    token = tx.claim_request(request, event=(
        AuditKind.REQUEST_EXECUTING, to_us(now), actor,
        {"from": request.status.value, "to": S.EXECUTING.value, "executor": actor}),
        status=S.EXECUTING, updated_at=now, lease_until=lease_until, executor=actor,
        commit=last, approvals=approvals)
    if token is None:
        raise Conflict(f"request {request.id} changed underneath", code="already_decided",
                       status=request.status.value)
    tx.notify(request.id)
    return token


def move_event(source: S, target: S, *, now: float, actor: str | None,
               changes: dict[str, Any]) -> Event:
    """The audit event of ``source → target`` with ``changes``: ``(kind, at_us, actor,
    data)``, as ``record_move`` and ``Store.finish_execution`` write it."""
    check(source, target)
    data: dict[str, Any] = {"from": source.value, "to": target.value}
    data.update((key, changes[key]) for key in _AUDITED if key in changes)
    return _MOVED[target], to_us(now), actor, data


def record_move(tx: Tx, request_id: str, source: S, target: S, *, now: float,
                actor: str | None, changes: dict[str, Any]) -> None:
    """The audit event (and wake-up) of a move already written in ``tx`` — for a caller
    that wrote it with a narrower compare-and-set (the fencing token)."""
    kind, at_us, who, data = move_event(source, target, now=now, actor=actor, changes=changes)
    tx.record_audit(kind, at_us=at_us, request_id=request_id, actor=who, data=data)
    tx.notify(request_id)
