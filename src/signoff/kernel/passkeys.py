"""Approvers' passkeys: registered, listed and removed, each write with its audit event (a
part of the gate).

Registration is the WebAuthn ceremony: ``registration_options`` makes a challenge for one
approver, for the relying party (RP id and origin) the server serves at, good for
``CHALLENGE_TTL`` seconds. A gate with a signing key makes the challenge a JWS of that
state signed with its key, so any server of the deployment (every key is published) can
take the answer — several servers behind one address need nothing shared but the
database; without a key it is kept in this process, single use. ``register`` checks the
browser's answer to it (``webauthn.verify_registration_response``, user verification
required) and stores the credential with the RP id and origin it was made for
(``passkey.registered``); a credential registered already is refused, so an answer counts
once. The options of an approval (``assertion_options``) ask for the approver's own
passkeys over the challenge ``signoff.kernel.assertions`` derives from what is approved.
``inbox_url``, set by the server, is where a refusal says to approve instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from signoff import inputs, keys
from signoff.audit import AuditKind, to_us
from signoff.canonical import args_hash, parse_args
from signoff.errors import Forbidden, InvalidInput, NotFound, SignatureInvalid
from signoff.identity import Identity
from signoff.kernel.assertions import b64, challenge, made_of, unb64
from signoff.kernel.signing import Signing
from signoff.keys import verify_jws
from signoff.model import DecisionKind, RequestStatus
from signoff.store.base import Store
from signoff.store.records import Passkey

REGISTRATION = "signoff-passkey-registration+jws"  # the JWS type of a stateless challenge
CHALLENGE_TTL = 300.0  # seconds a registration challenge may be answered in
NAME_MAX = 64


class Passkeys:
    def __init__(self, store: Store, *, clock: Callable[[], float],
                 signing: Signing | None = None) -> None:
        self.store = store
        self.clock = clock
        self.signing = signing  # a key makes registration challenges stateless
        self.inbox_url: Callable[[], str | None] = lambda: None
        self._lock = threading.Lock()
        # challenge (base64url) → (user, rp id, origin, expires at)
        self._pending: dict[str, tuple[str, str, str, float]] = {}

    def where(self) -> str | None:
        """The inbox's URL, where an approval with a passkey is given (``None``: unknown)."""
        return self.inbox_url()

    def passkeys(self, user: str) -> list[Passkey]:
        return self.store.passkeys_of(user)

    def registration_options(self, identity: Identity, *, rp_id: str, origin: str,
                             rp_name: str = "signoff") -> dict[str, Any]:
        """``PublicKeyCredentialCreationOptions`` (as JSON) for a new passkey of
        ``identity``: user verification required, its passkeys excluded."""
        import webauthn  # noqa: PLC0415 (the server extra: only where a passkey is in play)
        import webauthn.helpers.structs as s  # noqa: PLC0415

        _may_hold_passkeys(identity)
        now = self.clock()
        key = self.signing.key if self.signing is not None else None
        state = {"user": identity.name, "rp_id": rp_id, "origin": origin,
                 "exp": now + CHALLENGE_TTL, "nonce": b64(os.urandom(16))}
        options = webauthn.generate_registration_options(
            challenge=key.jws(state, typ=REGISTRATION).encode("ascii") if key else None,
            rp_id=rp_id, rp_name=rp_name, user_name=identity.name,
            user_id=hashlib.sha256(identity.name.encode()).digest()[:16],
            exclude_credentials=[s.PublicKeyCredentialDescriptor(id=unb64(p.id))
                                 for p in self.store.passkeys_of(identity.name)],
            authenticator_selection=s.AuthenticatorSelectionCriteria(
                resident_key=s.ResidentKeyRequirement.PREFERRED,
                user_verification=s.UserVerificationRequirement.REQUIRED),
            timeout=int(CHALLENGE_TTL * 1000))
        if key is None:
            with self._lock:
                self._pending = {k: v for k, v in self._pending.items() if v[3] > now}
                self._pending[b64(options.challenge)] = (
                    identity.name, rp_id, origin, now + CHALLENGE_TTL)
        out: dict[str, Any] = json.loads(webauthn.options_to_json(options))
        return out

    def register(self, identity: Identity, response: Mapping[str, Any], *,
                 name: str) -> Passkey:
        """Check the browser's answer to a challenge this gate made for ``identity`` (used
        up whether it holds or not) and store the passkey."""
        import webauthn  # noqa: PLC0415 (the server extra: only where a passkey is in play)
        import webauthn.helpers.exceptions  # noqa: PLC0415

        _may_hold_passkeys(identity)
        name = inputs.text("name", name.strip() or "passkey", NAME_MAX)
        sent = _sent_challenge(response)
        now = self.clock()
        with self._lock:
            pending = self._pending.pop(sent, None)
        if pending is None and self.signing is not None and self.signing.key is not None:
            pending = self._signed_state(sent)
        if pending is None or pending[0] != identity.name or pending[3] <= now:
            raise SignatureInvalid("this registration answers no challenge made for you here "
                                   "(or it expired): start again", code="passkey_invalid")
        _, rp_id, origin, _ = pending
        try:
            verified = webauthn.verify_registration_response(
                credential=dict(response), expected_challenge=unb64(sent),
                expected_rp_id=rp_id, expected_origin=origin, require_user_verification=True)
        except webauthn.helpers.exceptions.InvalidRegistrationResponse as exc:
            raise SignatureInvalid(f"the passkey registration does not hold: {exc}",
                                   code="passkey_invalid") from None
        except (webauthn.helpers.exceptions.WebAuthnException, ValueError, TypeError,
                KeyError) as exc:
            raise SignatureInvalid(f"malformed passkey registration: {exc}",
                                   code="passkey_invalid") from None
        passkey = Passkey(
            id=b64(verified.credential_id), user=identity.name,
            public_key=b64(verified.credential_public_key),
            sign_count=int(verified.sign_count), name=name, rp_id=rp_id, origin=origin,
            created_at=now)
        with self.store.transaction() as tx:
            if not tx.add_passkey(passkey):
                raise SignatureInvalid("this passkey is registered already",
                                       code="passkey_invalid")
            tx.append_audit(AuditKind.PASSKEY_REGISTERED, at_us=to_us(now), request_id=None,
                            actor=identity.name, data={
                                "user": identity.name, "credential_id": passkey.id,
                                "name": name, "rp_id": rp_id, "origin": origin})
        return passkey

    def _signed_state(self, sent: str) -> tuple[str, str, str, float] | None:
        """The state a stateless challenge carries, if a key of this deployment signed it."""
        try:
            token = unb64(sent).decode("ascii")
            _, state = verify_jws(token, keys.read_jwks(self.signing.jwks()) if self.signing
                                  else {}, typ=REGISTRATION)
            return (str(state["user"]), str(state["rp_id"]), str(state["origin"]),
                    float(state["exp"]))
        except (SignatureInvalid, ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None

    def remove(self, user: str, credential_id: str, *, actor: str) -> Passkey:
        """Remove one of ``user``'s passkeys: approvals it signed no longer run."""
        credential_id = inputs.credential_id("credential_id", credential_id)
        now = self.clock()
        with self.store.transaction() as tx:
            passkey = tx.passkey(credential_id)
            if passkey is None or passkey.user != user \
                    or not tx.remove_passkey(user, credential_id, at=now):
                raise NotFound(f"{user} has no passkey {credential_id!r}",
                               code="passkey_not_found")
            tx.append_audit(AuditKind.PASSKEY_REMOVED, at_us=to_us(now), request_id=None,
                            actor=actor, data={"user": user, "credential_id": credential_id,
                                               "name": passkey.name})
        return passkey

    def assertion_options(self, request_id: str, identity: Identity, *, rp_id: str,
                          kind: DecisionKind | str = DecisionKind.APPROVE,
                          args: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
        """``PublicKeyCredentialRequestOptions`` (as JSON) for approving (or, with ``args``,
        editing) a pending request: the challenge made of what will be approved, the
        approver's own passkeys for ``rp_id``, user verification required."""
        kind = DecisionKind(kind)
        if kind not in (DecisionKind.APPROVE, DecisionKind.EDIT):
            raise InvalidInput("only an approve or an edit is signed with a passkey",
                               code="invalid_kind", field="kind")
        request = self.store.get_request(request_id)
        if request is None:
            raise NotFound(f"no approval request {request_id!r}", code="not_found")
        if request.status is not RequestStatus.PENDING:
            raise NotFound(f"request {request_id} is not pending", code="not_pending")
        target = request.run_hash
        if kind is DecisionKind.EDIT:
            target = args_hash(parse_args(args))
        mine = [p for p in self.store.passkeys_of(identity.name) if p.rp_id == rp_id]
        parts = made_of(request.id, target, kind, request.version)
        return {"challenge": b64(challenge(parts)), "rpId": rp_id,
                "allowCredentials": [{"type": "public-key", "id": p.id} for p in mine],
                "userVerification": "required", "timeout": int(CHALLENGE_TTL * 1000),
                "made_of": parts}


def _may_hold_passkeys(identity: Identity) -> None:
    if not identity.may_decide:
        raise Forbidden(f"{identity.name} decides nothing and holds no passkey",
                        code="agent_cannot_decide")


def _sent_challenge(response: Mapping[str, Any]) -> str:
    """The challenge a registration answers, read from its client data."""
    try:
        client_data = json.loads(unb64(response["response"]["clientDataJSON"]))
        sent = client_data["challenge"]
    except (KeyError, TypeError, ValueError) as exc:
        raise SignatureInvalid(f"malformed passkey registration: {exc}",
                               code="passkey_invalid") from None
    if not isinstance(sent, str):
        raise SignatureInvalid("malformed passkey registration: no challenge",
                               code="passkey_invalid")
    return sent
