"""Receipts of approvals: signed in the transaction that approves, served to who may read them.

The decision that moves a request to ``approved`` (``Decider.apply``: the vote that
completes the quorum, an edit, the approvals "auto-approve this thread" adds) hands the
request, its decision record and the decisions before it to ``Receipts.issue``, which
signs the receipt (``signoff.receipts``) with the gate's key and keeps it in the same
transaction: the approval and its receipt commit together or not at all. Signing is one
Ed25519 signature over a few hundred bytes (tens of microseconds) and the row is sent
with the transaction's next statement: no round trip of its own. A gate without a key
signs nothing; asked for a receipt, it answers ``receipt_unavailable``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from signoff import receipts
from signoff.errors import NotFound
from signoff.identity import Identity
from signoff.kernel.outcomes import Outcome
from signoff.kernel.signing import Signing
from signoff.model import ApprovalRequest, DecisionKind, DecisionRecord
from signoff.store.base import Store, Tx

if TYPE_CHECKING:  # execution imports deciding, which imports this
    from signoff.kernel.execution import Execution

APPROVING = (DecisionKind.APPROVE, DecisionKind.EDIT)


class Receipts:
    """Issues and reads the receipts of approvals (a part of the gate)."""

    def __init__(self, store: Store, signing: Signing, *, issuer: str,
                 lifetime: float = receipts.DEFAULT_LIFETIME) -> None:
        self.store = store
        self.signing = signing
        self.issuer = issuer  # names the deployment: every server on one database alike
        # How long a receipt holds when its request has no expiry of its own.
        self.lifetime = lifetime

    def issue(self, tx: Tx, request: ApprovalRequest, record: DecisionRecord,
              identity: Identity, earlier: Sequence[DecisionRecord], *,
              now: float) -> str | None:
        """Sign and keep the receipt of ``request``, approved now by ``record`` (the
        decision of ``identity``) after ``earlier``; ``None`` without a key."""
        key = self.signing.key
        if key is None:
            return None
        votes = [d for d in earlier if d.kind in APPROVING and d.args_hash == request.run_hash]
        roles = {identity.name: identity.roles}
        if votes:  # a quorum of several: the others' roles as stored now, as quorum read them
            roles.update((name, user.roles) for name, user
                         in tx.approvers(request.id, request.run_hash)
                         if user is not None and name != identity.name)
        approvals = tuple(
            receipts.Approval(approver=d.approver, roles=tuple(roles.get(d.approver, ())),
                              kind=d.kind.value, scope=d.scope.value, at=d.created_at,
                              passkey=receipts.passkey_of(d))
            for d in [*votes, record])
        expires = request.expires_at if request.expires_at is not None else now + self.lifetime
        token = receipts.sign(receipts.Receipt(
            version=receipts.VERSION, issuer=self.issuer, request_id=request.id,
            tool=request.tool, args_hash=request.run_hash, proposed_hash=request.args_hash,
            definition_hash=request.definition_hash, thread_id=request.thread_id,
            approvals=approvals, policy_version=request.policy_version, approved_at=now,
            expires_at=expires), key)
        tx.put_receipt(request.id, token, kid=key.kid, at=now)
        return token

    def receipt(self, request_id: str) -> str:
        """The receipt of ``request_id``; ``NotFound(receipt_unavailable)`` when none was
        signed (not approved, or approved by a server without a key)."""
        token = self.store.receipt(request_id)
        if token is None:
            raise NotFound(f"request {request_id} has no receipt: it was not approved, or "
                           "approved by a server without a signing key",
                           code="receipt_unavailable")
        return token

    def attach(self, claimed: Execution | Outcome) -> Execution | Outcome:
        """A claim's ``Execution`` with its request's receipt (``None`` if it has none)."""
        if isinstance(claimed, Outcome):
            return claimed
        return dataclasses.replace(claimed, receipt=self.store.receipt(claimed.request_id))
