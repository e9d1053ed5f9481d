"""A software WebAuthn authenticator for tests: a P-256 key that registers (attestation
``none``) and signs assertions as a browser's authenticator would, so passkey approvals
are tested without a browser. ``uv=False`` leaves the user-verified flag out."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

RP_ID = "localhost"
ORIGIN = "http://localhost:8000"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class SoftKey:
    def __init__(self, *, rp_id: str = RP_ID, origin: str = ORIGIN, uv: bool = True) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(16)
        self.rp_id, self.origin, self.uv = rp_id, origin, uv
        self.count = 0

    @property
    def id(self) -> str:
        return b64(self.credential_id)

    def _flags(self, attested: bool = False) -> int:
        return 0x01 | (0x04 if self.uv else 0) | (0x40 if attested else 0)

    def _cose(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"),
                            -3: numbers.y.to_bytes(32, "big")})

    def _client_data(self, kind: str, challenge: str) -> bytes:
        return json.dumps({"type": kind, "challenge": challenge, "origin": self.origin,
                           "crossOrigin": False}).encode()

    def register(self, options: dict[str, Any]) -> dict[str, Any]:
        """The answer of ``navigator.credentials.create`` to registration options."""
        auth_data = (hashlib.sha256(self.rp_id.encode()).digest()
                     + bytes([self._flags(attested=True)]) + self.count.to_bytes(4, "big")
                     + bytes(16) + len(self.credential_id).to_bytes(2, "big")
                     + self.credential_id + self._cose())
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {"id": self.id, "rawId": self.id, "type": "public-key",
                "response": {"clientDataJSON": b64(self._client_data(
                    "webauthn.create", options["challenge"])),
                    "attestationObject": b64(attestation), "transports": ["internal"]},
                "clientExtensionResults": {}, "authenticatorAttachment": "platform"}

    def assert_(self, challenge: str) -> dict[str, Any]:
        """The answer of ``navigator.credentials.get`` to a challenge (base64url)."""
        self.count += 1
        auth_data = (hashlib.sha256(self.rp_id.encode()).digest() + bytes([self._flags()])
                     + self.count.to_bytes(4, "big"))
        client_data = self._client_data("webauthn.get", challenge)
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(),
                                  ec.ECDSA(hashes.SHA256()))
        return {"id": self.id, "rawId": self.id, "type": "public-key",
                "response": {"clientDataJSON": b64(client_data),
                             "authenticatorData": b64(auth_data), "signature": b64(signature),
                             "userHandle": None},
                "clientExtensionResults": {}, "authenticatorAttachment": "platform"}
