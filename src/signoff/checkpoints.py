"""Signed audit checkpoints: a server's signature on the chain's head (index and hash).

The hash chain (``signoff.audit``) shows an edited event, but not a chain rewritten
consistently — every hash recomputed — by someone with the database's owner rights. A
checkpoint closes that: a server with a signing key (``signoff.keys``) signs the head
regularly, and the signature is stored beside the chain (``audit_signatures``, append-only).
A rewrite changes the hash at every signed index after it, and nobody without the private
key can sign the new hashes; verification against keys held outside the database finds it.

What is signed is a compact JWS (RFC 7515, ``EdDSA``) whose protected header names the key
(``kid``, its RFC 7638 thumbprint: the deployment that signed) and the type ``TYP``, and
whose payload is the RFC 8785 JSON ``{"at_us": …, "hash": …, "idx": …}`` — the index, the
chain's hash at it and when it was signed. Anyone with the JWKS can check it, with no
database and no signoff: split, base64url-decode, verify the Ed25519 signature over
``header.payload``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from signoff.errors import SignatureInvalid
from signoff.keys import SigningKey, verify_jws

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

TYP = "signoff-audit-checkpoint+jws"  # a receipt's signature can never pass for one of these


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One stored signature: the chain had ``hash`` at ``index`` when ``kid`` signed it."""

    index: int
    hash: str
    kid: str
    at_us: int  # when it was signed (server clock, microseconds since the epoch)
    signature: str  # the compact JWS

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "hash": self.hash, "kid": self.kid, "at_us": self.at_us,
                "signature": self.signature}


def sign(key: SigningKey, *, index: int, hash: str, at_us: int) -> Checkpoint:
    """Sign the chain's ``hash`` at ``index`` with ``key``."""
    token = key.jws({"idx": index, "hash": hash, "at_us": at_us}, typ=TYP)
    return Checkpoint(index, hash, key.kid, at_us, token)


def check(checkpoint: Checkpoint, keys: Mapping[str, Ed25519PublicKey]) -> None:
    """Refuse (``SignatureInvalid``) a checkpoint whose signature does not verify with one of
    ``keys`` (``unknown_key``, ``signature_invalid``, ``malformed``), or whose signed index,
    hash, time or key are not the row's (``malformed``: a signature moved to another row)."""
    header, payload = verify_jws(checkpoint.signature, keys, typ=TYP)
    if header.get("kid") != checkpoint.kid or payload != {
            "idx": checkpoint.index, "hash": checkpoint.hash, "at_us": checkpoint.at_us}:
        raise SignatureInvalid("the signature is over another index, hash, time or key than "
                               "its row's", code="malformed")
