"""Withdrawing a request on a person's word: the asker, or an admin (a part of the gate).

A request nobody will decide any more — its run died without a checkpointer, the
agent gave up, it was asked by mistake — blocks its thread until it expires. Its
asker (principal or agent) or an admin may cancel it, with a reason the waiting
agent reads. Pending and approved-but-not-started requests can be cancelled; one
that runs or ran cannot. The move commits with its audit event, under the
canceller's name.
"""

from __future__ import annotations

from collections.abc import Callable

from signoff import inputs
from signoff.errors import Conflict, Forbidden, InvalidDecision, NotFound, Unauthenticated
from signoff.identity import Identity, IdentityKind
from signoff.kernel import lifecycle
from signoff.kernel.outcomes import Outcome, outcome_of
from signoff.kernel.ownership import asked
from signoff.kernel.visibility import visible
from signoff.model import ApprovalRequest, RequestStatus
from signoff.store.base import Store

CANCELLABLE = (RequestStatus.PENDING, RequestStatus.APPROVED)


class Canceller:
    """Withdraws requests: on a person's word (``withdraw``) or its waiting caller's."""

    def __init__(self, store: Store, *, clock: Callable[[], float], agent: str | None) -> None:
        self.store = store
        self.clock = clock
        self.agent = agent

    def withdraw(self, request_id: str, *, identity: Identity, reason: str,
                 pending_only: bool = False) -> ApprovalRequest:
        """Cancel ``request_id`` as ``identity`` (``pending_only``: not once approved).
        Raises ``InvalidInput`` (the input contract), ``InvalidDecision(missing_reason)``,
        ``NotFound``, ``Forbidden`` (``not_requester``, ``identity_disabled``) or
        ``Conflict(already_decided)``."""
        request_id = inputs.identifier("request_id", request_id)
        reason = inputs.text("reason", reason, inputs.REASON_MAX).strip()
        if not reason:
            raise InvalidDecision("a cancellation needs a reason the agent can read",
                                  code="missing_reason")
        now = self.clock()
        with self.store.transaction() as tx:
            request = tx.get_request(request_id, lock=True)
            if request is None:
                raise NotFound(f"no approval request {request_id!r}", code="not_found")
            current = tx.get_user(identity.name)  # as stored now, not as signed in
            if current is None:
                raise Unauthenticated(f"{identity.name} is no longer an identity here",
                                      code="unauthenticated")
            if current.disabled:
                raise Forbidden(f"{identity.name} is disabled", code="identity_disabled")
            visible(current, request)  # an agent: another's call is not found at all
            if not asked(request, current.name) and current.kind is not IdentityKind.ADMIN:
                raise Forbidden(f"only {request.principal or request.agent or 'the requester'} "
                                "or an admin may cancel this request", code="not_requester")
            if request.status not in (CANCELLABLE if not pending_only
                                      else (RequestStatus.PENDING,)):
                raise Conflict(f"request {request_id} is already {request.status.value}",
                               code="already_decided", status=request.status.value)
            moved = lifecycle.transition(
                tx, request, RequestStatus.CANCELLED, now=now, actor=current.name,
                outcome_code="cancelled", outcome_reason=reason)
            tx.notify(request_id)
        return moved

    def cancel(self, request_id: str, *, actor: str | None, reason: str) -> Outcome:
        """Withdraw a pending request (its caller gave up waiting: a subagent's time limit).
        A request decided meanwhile keeps its decision; the outcome says which."""
        now = self.clock()
        with self.store.transaction() as tx:
            locked = tx.get_request(request_id, lock=True)
            if locked is None:
                raise NotFound(f"no approval request {request_id!r}")
            if locked.status is RequestStatus.PENDING:
                locked = lifecycle.transition(
                    tx, locked, RequestStatus.CANCELLED, now=now, actor=actor or self.agent,
                    outcome_code="cancelled", outcome_reason=reason)
                tx.notify(request_id)
        return outcome_of(locked)
