"""Receipts: a server's signed word that it recorded the approval of exactly these arguments.

When a request becomes ``approved`` the kernel signs a receipt with the server's key
(``signoff.keys``) in the same transaction: a compact JWS (``typ`` ``signoff-receipt+jws``)
whose payload names the request, the tool, the hash of the arguments that may run, the
thread, every approving decision (who, with which roles, how, when, and the passkey
assertion when the decision carried one), the policy version, when it was approved and
until when the receipt holds (``exp``), and the deployment that issued it (``iss``).

An executor elsewhere — another host, another language — runs an approved call only when
handed a receipt for exactly the arguments it is asked to run, checked here with nothing
but the issuer's JWKS (``GET /.well-known/jwks.json``, or a copy of it): no database, no
server, no signoff extras. A receipt proves what the server recorded; that a person (and
not a stolen token) approved is what a passkey assertion inside it proves.

    receipt = verify(token, jwks_document, request_id="req_…", args_hash=args_hash(args),
                     issuer="https://signoff.example")

Refusals are ``SignatureInvalid`` with a stable code: ``malformed``, ``unknown_key``,
``signature_invalid``, ``expired``, ``wrong_issuer``, ``wrong_request`` (a receipt for
another request) or ``wrong_args`` (a receipt for other arguments).
"""

from __future__ import annotations

import hmac
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from signoff.errors import SignatureInvalid
from signoff.keys import MAX_TOKEN, SigningKey, read_jwks, unb64url, verify_jws

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

TYP = "signoff-receipt+jws"
VERSION = 1
DEFAULT_LIFETIME = 24 * 3600.0  # a receipt for a request without an expiry holds a day


@dataclass(frozen=True, slots=True)
class Approval:
    """One approving decision as the receipt records it."""

    approver: str
    roles: tuple[str, ...]  # the roles the approver held when the request was approved
    kind: str  # approve | edit
    scope: str  # once | thread | auto_thread
    at: float
    passkey: Any = None  # the stored WebAuthn assertion, when the decision carried one

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"approver": self.approver, "roles": list(self.roles),
                               "kind": self.kind, "scope": self.scope, "at": self.at}
        if self.passkey is not None:
            out["passkey"] = self.passkey
        return out


@dataclass(frozen=True, slots=True)
class Receipt:
    """A receipt's payload, verified; ``kid`` names the key that signed it."""

    version: int
    issuer: str
    request_id: str
    tool: str
    args_hash: str  # the hash of the arguments that may run (the edited ones, if edited)
    proposed_hash: str  # the hash of the arguments the agent proposed
    definition_hash: str | None
    thread_id: str | None
    approvals: tuple[Approval, ...]
    policy_version: str
    approved_at: float
    expires_at: float
    kid: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The payload as signed (``kid`` is the header's, not the payload's)."""
        return {"version": self.version, "iss": self.issuer, "request_id": self.request_id,
                "tool": self.tool, "args_hash": self.args_hash,
                "proposed_hash": self.proposed_hash, "definition_hash": self.definition_hash,
                "thread_id": self.thread_id,
                "approvals": [a.to_dict() for a in self.approvals],
                "policy_version": self.policy_version, "iat": self.approved_at,
                "exp": self.expires_at}


def sign(receipt: Receipt, key: SigningKey) -> str:
    """The compact JWS of ``receipt`` signed by ``key``."""
    return key.jws(receipt.to_dict(), typ=TYP)


def passkey_of(record: object) -> Any:
    """The WebAuthn assertion a decision record carries (``DecisionRecord.assertion``, JSON
    text as stored), as a JSON object, or ``None``: a record without one, or with one that
    does not parse as an object, has none."""
    value = getattr(record, "assertion", None)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return dict(value) if isinstance(value, Mapping) else None


def verify(token: str, jwks: Mapping[str, Any], *, now: float | None = None,
           request_id: str | None = None, args_hash: str | None = None,
           issuer: str | None = None, leeway: float = 0.0) -> Receipt:
    """The receipt ``token`` holds, if one of the keys of ``jwks`` (a JWKS document, or keys
    by ``kid`` as ``signoff.keys.read_jwks`` gives) signed it, it has not expired by ``now``
    (the local clock unless given), and it is for ``request_id``, ``args_hash`` and
    ``issuer`` when they are given. Raises ``SignatureInvalid`` otherwise."""
    keys = _keys(jwks)
    header, payload = verify_jws(token, keys, typ=TYP)
    receipt = _parsed(payload, str(header.get("kid")))
    if issuer is not None and receipt.issuer != issuer:
        raise SignatureInvalid(f"a receipt issued by {receipt.issuer!r}, not {issuer!r}",
                               code="wrong_issuer")
    if request_id is not None and receipt.request_id != request_id:
        raise SignatureInvalid(f"a receipt for request {receipt.request_id}, not "
                               f"{request_id}", code="wrong_request")
    if args_hash is not None and not hmac.compare_digest(receipt.args_hash, args_hash):
        raise SignatureInvalid(f"a receipt for other arguments ({receipt.args_hash}, not "
                               f"{args_hash})", code="wrong_args")
    moment = time.time() if now is None else now
    if moment >= receipt.expires_at + leeway:
        raise SignatureInvalid(f"the receipt expired at {receipt.expires_at}", code="expired")
    return receipt


def peek(token: str) -> Receipt:
    """What ``token`` says, parsed but NOT verified: for showing a receipt, never for
    trusting one (``verify`` does that). ``SignatureInvalid(malformed)`` if it is none."""
    parts = token.split(".") if isinstance(token, str) and len(token) <= MAX_TOKEN else []
    try:
        if len(parts) != 3:
            raise ValueError("not three dot-separated parts")
        header, payload = (json.loads(unb64url(p)) for p in parts[:2])
        if not isinstance(header, dict) or not isinstance(payload, dict):
            raise ValueError("not JSON objects")
    except ValueError as exc:
        raise SignatureInvalid(f"not a receipt: {exc}", code="malformed") from exc
    return _parsed(payload, str(header.get("kid")))


def _keys(jwks: Mapping[str, Any]) -> Mapping[str, Ed25519PublicKey]:
    if isinstance(jwks, Mapping) and "keys" in jwks:
        return read_jwks(jwks)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PublicKey,
    )

    if all(isinstance(k, Ed25519PublicKey) for k in jwks.values()):
        return jwks
    raise SignatureInvalid("not a JWKS document ({\"keys\": [...]})", code="key_invalid")


def _parsed(payload: Mapping[str, Any], kid: str) -> Receipt:
    """The payload as a ``Receipt``, or ``malformed``: every field of its type."""
    try:
        if payload.get("version") != VERSION:
            raise ValueError(f"version {payload.get('version')!r}, not {VERSION}")
        approvals = tuple(_approval(a) for a in _list(payload["approvals"]))
        if not approvals:
            raise ValueError("no approvals")
        return Receipt(
            version=VERSION, issuer=_text(payload["iss"]),
            request_id=_text(payload["request_id"]), tool=_text(payload["tool"]),
            args_hash=_text(payload["args_hash"]), proposed_hash=_text(payload["proposed_hash"]),
            definition_hash=_optional(payload.get("definition_hash")),
            thread_id=_optional(payload.get("thread_id")), approvals=approvals,
            policy_version=_text(payload["policy_version"]),
            approved_at=_number(payload["iat"]), expires_at=_number(payload["exp"]), kid=kid)
    except (KeyError, TypeError, ValueError) as exc:
        raise SignatureInvalid(f"not a receipt: {exc}", code="malformed") from exc


def _approval(item: Any) -> Approval:
    if not isinstance(item, Mapping):
        raise ValueError("an approval is not an object")
    return Approval(approver=_text(item["approver"]),
                    roles=tuple(_text(r) for r in _list(item["roles"])),
                    kind=_text(item["kind"]), scope=_text(item["scope"]),
                    at=_number(item["at"]), passkey=item.get("passkey"))


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{value!r} is not a non-empty string")
    return value


def _optional(value: Any) -> str | None:
    return None if value is None else _text(value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


def _list(value: Any) -> Sequence[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{value!r} is not a list")
    return value
