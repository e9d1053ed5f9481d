"""Passkey approvals: the challenge an approval signs, checked when it is given and again
when the call is claimed.

A request that needs a passkey (``ApprovalRequest.passkey``) is approved only by a WebAuthn
assertion of the approver's own registered passkey, over a challenge derived from what the
approver approves: the request id, the arguments hash that will run (an edit: the edited
arguments' hash), the decision kind and the request's version — the sha256 of their RFC
8785 JSON, so no server-side state is needed to check it, now or later. The decision keeps
the assertion and what its challenge was made of (``DecisionRecord.assertion``); the claim
verifies every approving decision's assertion again against the passkey as registered now
(``recheck``), so a decision written into the database by hand, a passkey removed since, or
arguments changed after the approval never run. ``webauthn`` (the server extra) is
imported only when a passkey is in play.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from signoff import jcs
from signoff.audit import AuditEvent, Finding, Verification
from signoff.errors import PasskeyRequired, SignatureInvalid
from signoff.model import ApprovalRequest, DecisionKind, DecisionRecord, RequestStatus
from signoff.store.base import Store, Tx
from signoff.store.records import Passkey


def b64(data: bytes) -> str:
    """base64url without padding, as WebAuthn writes binary in JSON."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def made_of(request_id: str, args_hash: str, kind: DecisionKind | str,
            version: int) -> dict[str, Any]:
    """What a decision's challenge is made of."""
    return {"request_id": request_id, "args_hash": args_hash,
            "kind": DecisionKind(kind).value, "version": int(version)}


def challenge(parts: Mapping[str, Any]) -> bytes:
    """The challenge itself: sha256 over the RFC 8785 JSON of ``made_of``."""
    return hashlib.sha256(jcs.dumps(dict(parts))).digest()


def where_to_approve(request_id: str, inbox_url: str | None) -> str:
    if inbox_url:
        return f"approve it with a passkey in the inbox: {inbox_url}/requests/{request_id}"
    return "approve it with a passkey in the signoff inbox"


def verified(tx: Tx, request: ApprovalRequest, *, kind: DecisionKind, target_hash: str,
             approver: str, assertion: Mapping[str, Any] | None, now: float,
             inbox_url: str | None = None) -> str:
    """Check an approval's assertion under the request's lock and count its use; the text
    to store with the decision. ``PasskeyRequired`` without one; ``SignatureInvalid``
    (``passkey_*`` codes) when it does not hold."""
    if assertion is None:
        raise PasskeyRequired(
            f"approving {request.id} needs the approver's passkey, which this surface "
            f"cannot give: {where_to_approve(request.id, inbox_url)}", url=(
                f"{inbox_url}/requests/{request.id}" if inbox_url else None))
    parts = made_of(request.id, target_hash, kind, request.version)
    passkey = own_passkey(tx, assertion, approver)
    sign_count = check(assertion, parts, passkey, sign_count=passkey.sign_count)
    if not tx.use_passkey(passkey.id, sign_count=sign_count, at=now):
        raise SignatureInvalid("this passkey's sign count did not move on: a replayed "
                               "assertion", code="passkey_replayed")
    return json.dumps({"credential": dict(assertion), "challenge": parts,
                       "passkey": passkey.id}, sort_keys=True, ensure_ascii=False)


def own_passkey(tx: Tx, assertion: Mapping[str, Any], approver: str) -> Passkey:
    credential_id = assertion.get("id")
    if not isinstance(credential_id, str) or not credential_id:
        raise SignatureInvalid("a passkey assertion needs the credential's id",
                               code="passkey_invalid")
    passkey = tx.passkey(credential_id)
    if passkey is None or passkey.removed_at is not None:
        raise SignatureInvalid("no passkey with this id is registered here",
                               code="passkey_unknown")
    if passkey.user != approver:
        raise SignatureInvalid(f"this passkey is not {approver}'s", code="passkey_not_yours")
    return passkey


def check(assertion: Mapping[str, Any], parts: Mapping[str, Any], passkey: Passkey, *,
          sign_count: int) -> int:
    """The WebAuthn verification proper: this challenge, the passkey's relying party and
    origin, its public key, user verification required, the sign count above
    ``sign_count`` (0: any). Returns the new sign count."""
    import webauthn  # noqa: PLC0415 (the server extra: only where a passkey is in play)
    import webauthn.helpers.exceptions  # noqa: PLC0415

    try:
        result = webauthn.verify_authentication_response(
            credential=dict(assertion), expected_challenge=challenge(parts),
            expected_rp_id=passkey.rp_id, expected_origin=passkey.origin,
            credential_public_key=unb64(passkey.public_key),
            credential_current_sign_count=sign_count, require_user_verification=True)
    except webauthn.helpers.exceptions.InvalidAuthenticationResponse as exc:
        text = str(exc)
        code = "passkey_unverified" if "verif" in text.lower() and "user" in text.lower() \
            else "passkey_replayed" if "sign count" in text.lower() else "passkey_invalid"
        raise SignatureInvalid(f"the passkey assertion does not hold: {text}",
                               code=code) from None
    except (webauthn.helpers.exceptions.WebAuthnException, ValueError, TypeError,
            KeyError) as exc:  # not an assertion at all
        raise SignatureInvalid(f"malformed passkey assertion: {exc}",
                               code="passkey_invalid") from None
    return int(result.new_sign_count)


def problem(read: Tx | Store, request: ApprovalRequest, decision: DecisionRecord, *,
            removed_counts: bool = True) -> str | None:
    """Why one approving decision's stored assertion does not prove it (``None``: it does):
    it signs this request, the hash that will run and this kind, with the approver's own
    passkey — one still registered, unless ``removed_counts`` is ``False`` (the history of
    a call that ran: its claim checked the passkey then)."""
    try:
        stored = json.loads(decision.assertion or "null")
        if not isinstance(stored, dict):
            return "it carries no passkey assertion"
        parts, credential = stored.get("challenge"), stored.get("credential")
        if not isinstance(parts, dict) or not isinstance(credential, dict):
            return "its passkey assertion is malformed"
        if parts != made_of(request.id, request.run_hash, decision.kind,
                            int(parts.get("version", -1))):
            return "its passkey assertion signs another request, arguments or decision"
        passkey = read.passkey(str(credential.get("id")))
        if passkey is None or (removed_counts and passkey.removed_at is not None):
            return "its passkey is no longer registered"
        if passkey.user != decision.approver:
            return "its passkey is not the approver's"
        check(credential, parts, passkey, sign_count=0)
    except SignatureInvalid as exc:
        return exc.message
    except (ValueError, TypeError):
        return "its passkey assertion is malformed"
    return None


def recheck(read: Tx | Store, request: ApprovalRequest,
            decisions: list[DecisionRecord]) -> tuple[str, str] | None:
    """At the claim: every approval of the hash that will run proves itself, or
    ``("signature_invalid", why)``."""
    for decision in decisions:
        if decision.kind not in (DecisionKind.APPROVE, DecisionKind.EDIT) \
                or decision.args_hash != request.run_hash:
            continue
        why = problem(read, request, decision)
        if why is not None:
            return ("signature_invalid",
                    f"the approval by {decision.approver} ({decision.id}) does not hold: {why}")
    return None


# Past the claim: the passkey was checked when the call was claimed, so removing it since
# takes nothing back (the signature must still hold against its key, which is kept).
_CLAIMED = frozenset({RequestStatus.EXECUTING, RequestStatus.SUCCEEDED, RequestStatus.FAILED,
                      RequestStatus.UNKNOWN, RequestStatus.INVALIDATED,
                      RequestStatus.CANCELLED})


def unproven(store: Store) -> list[dict[str, str]]:
    """``audit verify``'s passkey check: every approval of a passkey request whose stored
    assertion does not prove it, named by request, decision and approver. A passkey
    removed counts against approvals still waiting to run, not against history."""
    found: list[dict[str, str]] = []
    for request in store.passkey_requests():
        for decision in store.decisions(request.id):
            if decision.kind not in (DecisionKind.APPROVE, DecisionKind.EDIT) \
                    or decision.args_hash != request.run_hash:
                continue
            why = problem(store, request, decision,
                          removed_counts=request.status not in _CLAIMED)
            if why is not None:
                found.append({"request_id": request.id, "decision_id": decision.id,
                              "approver": decision.approver, "reason": why})
    return found


class PasskeyCheck:
    """``audit verify``'s passkey check (one of ``signoff.kernel.auditing.CHECKS``): every
    passkey approval whose stored assertion does not prove it (``unproven``), named by
    request and approver (``passkey_unproven``)."""

    name = "passkeys"

    def __init__(self, store: Store, trust: object, clock: Callable[[], float]) -> None:
        self.store = store
        self.unproven: list[dict[str, str]] = []

    def see(self, event: AuditEvent) -> None:
        """The check reads the decisions themselves, not the log's events."""

    def findings(self, result: Verification) -> list[Finding]:
        self.unproven = unproven(self.store)
        return [Finding(self.name, "passkey_unproven", None,
                        f"passkey approval that does not hold: {f['request_id']} approved by "
                        f"{f['approver']} ({f['reason']})") for f in self.unproven]

    def summary(self) -> dict[str, Any]:
        return {"unproven": len(self.unproven)}
