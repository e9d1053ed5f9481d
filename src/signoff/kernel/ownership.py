"""No self-approval, by any route: who stands on the asking side of a call, and what they
may not do about it.

The *parties* of a thread are every principal and agent that ever asked for a call on
it (approval requests carry both). Without ``[policy] self_service_modes``:

* nobody decides a request they asked for, whatever the kind (``refusal``);
* a party of a thread may not approve one of its calls *for this thread* (a grant
  would cover the party's own later calls), nor *auto-approve the thread* (that raises
  its mode), nor edit one (the edited arguments are the
  editor's own call, which nobody else reviewed) — reject, respond and approve once
  another party's call stay open;
* a party of a thread may not raise its review mode (lowering is always fine);
* a mode raised by someone does not count for that someone's own calls on the thread:
  raising the mode of a fresh thread and then asking on it is refused in effect.

With ``self_service_modes = true`` (a single user choosing the mode of their own chat)
the last two are lifted: a party may raise its thread's mode up to the ceiling, and the
mode counts for its calls. Nothing lets anyone approve, edit or grant their own calls.
Every check is ``Forbidden`` with code ``self_approval``.
"""

from __future__ import annotations

from collections.abc import Collection

from signoff.errors import Forbidden
from signoff.identity import Identity
from signoff.model import ApprovalRequest, ApproveScope, Decision, DecisionKind, ReviewMode

CODE = "self_approval"


def asked(request: ApprovalRequest, name: str) -> bool:
    """``name`` asked for this call (its principal or its agent)."""
    return name in (request.principal, request.agent)


def decision_refusal(request: ApprovalRequest, name: str, decision: Decision,
                     parties: Collection[str]) -> Forbidden | None:
    """Why ``name``, a party of the request's thread, may not take ``decision`` on another
    party's call (``None``: it may, or ``name`` is no party)."""
    if name not in parties or not request.thread_id:
        return None
    if decision.kind is DecisionKind.EDIT:
        return Forbidden(f"{name} asks for calls in thread {request.thread_id} and cannot "
                         "edit its calls: the edited call would be their own, unreviewed",
                         code=CODE)
    if decision.kind is DecisionKind.APPROVE and decision.scope is ApproveScope.THREAD:
        return Forbidden(f"{name} asks for calls in thread {request.thread_id} and cannot "
                         "approve for the whole thread: the grant would cover their own calls",
                         code=CODE)
    if decision.kind is DecisionKind.APPROVE and decision.scope is ApproveScope.AUTO_THREAD:
        return Forbidden(f"{name} asks for calls in thread {request.thread_id} and cannot "
                         "switch it to auto-approve: the reviewer would pass their own calls",
                         code=CODE)
    return None


def mode_refusal(name: str | None, thread_id: str, new: ReviewMode, current: ReviewMode,
                 parties: Collection[str], *, self_service: bool) -> Forbidden | None:
    """Why ``name`` may not set the thread's mode to ``new`` (``None``: it may)."""
    if name is None or self_service or new.rank <= current.rank or name not in parties:
        return None
    return Forbidden(f"{name} asks for calls in thread {thread_id} and cannot raise its review "
                     f"mode ({current.value} → {new.value}); another approver can, or lower it",
                     code=CODE)


def mode_counts(mode: ReviewMode, set_by: str | None, askers: Collection[str | None],
                default: ReviewMode, *, self_service: bool) -> ReviewMode:
    """The stored mode as it applies to a call asked by ``askers``: one its own asker
    raised above the default does not count for them (the default does)."""
    if self_service or set_by is None or set_by not in askers or mode.rank <= default.rank:
        return mode
    return default


def refusal(request: ApprovalRequest, identity: Identity) -> Forbidden | None:
    """Why ``identity`` may not decide ``request`` (as the error ``decide`` raises), or
    ``None``. The inbox asks the same question to decide whether to show the buttons."""
    if not identity.may_decide:
        return Forbidden(f"{identity.name} is an agent identity and cannot decide",
                         code="agent_cannot_decide")
    if asked(request, identity.name):
        return Forbidden(f"{identity.name} asked for this call and cannot decide it",
                         code="self_approval")
    if not identity.holds_any(request.roles):
        return Forbidden(f"{identity.name} holds none of the roles "
                         f"{', '.join(request.roles)} this request needs", code="role_missing")
    return None
