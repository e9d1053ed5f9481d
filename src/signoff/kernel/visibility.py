"""Who may read a request: an agent sees the calls it asked for, nobody else's.

A request carries its callers' arguments and, once run, the tool's result: an agent
reading another agent's would learn what that one was told and did. So an agent
identity sees a request only if it is the request's *principal* — the authenticated
name the server recorded when it proposed — and an approver or admin (who must read
requests to decide them) sees every one. The ``agent`` field is not used here: it is
whatever the in-process caller called itself, not an identity anyone checked.

A request an agent may not see answers exactly as one that does not exist
(``404 not_found``): the refusal must not tell it which ids are taken. Asking for a
list of another requester's calls is refused outright (``403 not_your_request``).
"""

from __future__ import annotations

from signoff.errors import Forbidden, NotFound
from signoff.identity import Identity, IdentityKind
from signoff.model import ApprovalRequest

CODE = "not_your_request"


def sees_all(identity: Identity) -> bool:
    """Approvers and admins read every request; agents only their own."""
    return identity.kind is not IdentityKind.AGENT


def may_see(identity: Identity, request: ApprovalRequest) -> bool:
    return sees_all(identity) or request.principal == identity.name


def visible(identity: Identity, request: ApprovalRequest) -> ApprovalRequest:
    """``request`` if ``identity`` may read it; else the same ``NotFound`` an unknown id
    gets."""
    if not may_see(identity, request):
        raise NotFound(f"no approval request {request.id!r}", code="not_found")
    return request


def principal_filter(identity: Identity, requester: str | None) -> str | None:
    """The principal a list by ``identity`` is narrowed to (``None``: none); an agent
    naming another requester is refused."""
    if sees_all(identity):
        return None
    if requester is not None and requester != identity.name:
        raise Forbidden(f"{identity.name} is an agent identity and lists only its own calls; "
                        "listing another requester's needs an approver", code=CODE)
    return identity.name


def require_approver(identity: Identity, what: str) -> None:
    """``what`` spans every requester's calls: agents may not read it."""
    if not sees_all(identity):
        raise Forbidden(f"{identity.name} is an agent identity; {what} needs an approver",
                        code="approver_required")
