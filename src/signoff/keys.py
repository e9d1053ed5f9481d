"""Ed25519 signing keys: the server's own on disk, their public halves as a JWKS, and JWS.

What signoff signs (receipts of approvals, audit checkpoints) is signed with an Ed25519
key (``cryptography``) kept in a PEM file outside any workspace, readable by its owner
alone (0600; a key file others can read is refused, ``signing_key_exposed``). A key is
named by its RFC 7638 thumbprint (``kid``), so two deployments never share a name by
chance and a verifier can recompute it. Public keys travel as a JWKS (RFC 7517, ``OKP``
/ ``Ed25519``, RFC 8037); a signature travels as a compact JWS (RFC 7515) whose header
names its ``kid`` and whose payload is RFC 8785 JSON. Verifying needs only the JWKS:
no database, no server.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signoff import jcs
from signoff.errors import ConfigurationError, SignatureInvalid

# ``cryptography`` is imported where a key is made, read, written or used: a process that
# signs and verifies nothing (a coding agent's hook judging one call) never loads it.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

MAX_TOKEN = 256 * 1024  # a receipt of many decisions with passkeys stays far below this


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    """Strict base64url without padding; ``ValueError`` otherwise."""
    if not isinstance(text, str) or not text.isascii() or "=" in text:
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not base64url") from exc


def _raw(public: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def thumbprint(public: Ed25519PublicKey) -> str:
    """The RFC 7638 thumbprint of the key's JWK: its ``kid``."""
    members = {"crv": "Ed25519", "kty": "OKP", "x": b64url(_raw(public))}
    return b64url(hashlib.sha256(jcs.dumps(members)).digest())


def public_jwk(public: Ed25519PublicKey) -> dict[str, str]:
    return {"kty": "OKP", "crv": "Ed25519", "x": b64url(_raw(public)),
            "kid": thumbprint(public), "alg": "EdDSA", "use": "sig"}


def key_from_jwk(jwk: Mapping[str, Any]) -> tuple[str, Ed25519PublicKey]:
    """``(kid, key)`` from one JWK; ``SignatureInvalid(key_invalid)`` for anything else than
    an Ed25519 public key whose ``kid`` is its thumbprint."""
    try:
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or "d" in jwk:
            raise ValueError("not an Ed25519 public key")
        from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
            Ed25519PublicKey,
        )

        public = Ed25519PublicKey.from_public_bytes(unb64url(str(jwk["x"])))
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise SignatureInvalid(f"not an Ed25519 public JWK: {exc}", code="key_invalid") from exc
    kid = thumbprint(public)
    if jwk.get("kid", kid) != kid:
        raise SignatureInvalid("a JWK's kid is not its thumbprint", code="key_invalid")
    return kid, public


def read_jwks(document: Any) -> dict[str, Ed25519PublicKey]:
    """The keys of a JWKS document (``{"keys": [...]}``), by ``kid``. A key that is not
    Ed25519 is skipped (a JWKS may hold others); a malformed document is refused."""
    if not isinstance(document, Mapping) or not isinstance(document.get("keys"), list):
        raise SignatureInvalid("not a JWKS document ({\"keys\": [...]})", code="key_invalid")
    keys: dict[str, Ed25519PublicKey] = {}
    for jwk in document["keys"]:
        if isinstance(jwk, Mapping) and jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
            kid, public = key_from_jwk(jwk)
            keys[kid] = public
    return keys


def jwks(publics: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """A JWKS document of public JWKs, each once, in the order given."""
    seen: dict[str, dict[str, Any]] = {}
    for jwk in publics:
        seen.setdefault(str(jwk["kid"]), dict(jwk))
    return {"keys": list(seen.values())}


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A private Ed25519 key and its name."""

    kid: str
    private: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> SigningKey:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
            Ed25519PrivateKey,
        )

        private = Ed25519PrivateKey.generate()
        return cls(thumbprint(private.public_key()), private)

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()

    def jwk(self) -> dict[str, str]:
        return public_jwk(self.public)

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data)

    def jws(self, payload: Mapping[str, Any], *, typ: str) -> str:
        """A compact JWS of ``payload`` (RFC 8785 JSON) signed with this key."""
        header = {"alg": "EdDSA", "kid": self.kid, "typ": typ}
        signing_input = f"{b64url(jcs.dumps(header))}.{b64url(jcs.dumps(dict(payload)))}"
        return f"{signing_input}.{b64url(self.sign(signing_input.encode('ascii')))}"


def verify_jws(token: str, keys: Mapping[str, Ed25519PublicKey], *,
               typ: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(header, payload)`` of a compact JWS signed by one of ``keys``. Refusals are
    ``SignatureInvalid``: ``malformed``, ``unknown_key`` (no key by its ``kid``: another
    deployment's, or one never published) or ``signature_invalid``."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN:
        raise SignatureInvalid("not a signed token (a string of at most 256 KiB)",
                               code="malformed")
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise SignatureInvalid("not a compact JWS (three dot-separated parts)", code="malformed")
    try:
        header = json.loads(unb64url(parts[0]))
        payload = json.loads(unb64url(parts[1]))
        signature = unb64url(parts[2])
    except ValueError as exc:
        raise SignatureInvalid(f"not a compact JWS: {exc}", code="malformed") from exc
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise SignatureInvalid("a JWS's header and payload must be JSON objects",
                               code="malformed")
    if header.get("alg") != "EdDSA" or header.get("typ") != typ:
        raise SignatureInvalid(f"not an EdDSA {typ} (header {header!r})", code="malformed")
    public = keys.get(str(header.get("kid")))
    if public is None:
        raise SignatureInvalid(f"no published key {header.get('kid')!r}: signed by another "
                               "deployment, or by a key never published", code="unknown_key")
    from cryptography.exceptions import InvalidSignature  # noqa: PLC0415

    try:
        public.verify(signature, f"{parts[0]}.{parts[1]}".encode("ascii"))
    except InvalidSignature as exc:
        raise SignatureInvalid("the signature does not match the signed bytes",
                               code="signature_invalid") from exc
    return header, payload


# ---- the key file ------------------------------------------------------------------------------


def load(path: str | os.PathLike[str]) -> SigningKey:
    """The key in ``path`` (PKCS#8 PEM, unencrypted), refused if others may read it."""
    path = Path(path)
    try:
        info = path.stat()
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read the signing key {path}: {exc.strerror}",
                                 code="signing_key_unreadable") from exc
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise ConfigurationError(
            f"the signing key {path} can be read by others (mode "
            f"{stat.S_IMODE(info.st_mode):o}): chmod 600 it", code="signing_key_exposed")
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PrivateKey,
    )

    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigurationError(f"{path} is not an unencrypted PEM private key",
                                 code="signing_key_invalid") from exc
    if not isinstance(private, Ed25519PrivateKey):
        raise ConfigurationError(f"{path} is not an Ed25519 key", code="signing_key_invalid")
    return SigningKey(thumbprint(private.public_key()), private)


def write(path: str | os.PathLike[str], key: SigningKey, *, replace: bool = True) -> None:
    """Write ``key`` to ``path`` atomically, 0600, its directory created 0700. Not
    ``replace``: ``FileExistsError`` if there is a key there already (two processes
    starting at once both end up with the one that was written first)."""
    path = Path(path)
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pem = key.private.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
            out.flush()
            os.fsync(out.fileno())
        if replace:
            os.replace(temporary, path)
        else:
            os.link(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def load_or_create(path: str | os.PathLike[str]) -> SigningKey:
    """The key in ``path``, made there first if there is none."""
    path = Path(path)
    if not path.exists():
        with contextlib.suppress(FileExistsError):  # another process made it first
            write(path, SigningKey.generate(), replace=False)
    return load(path)


def default_path() -> Path:
    """Where ``signoff serve`` keeps its key unless told: ``$XDG_DATA_HOME/signoff/`` (or
    ``~/.local/share/signoff/``), outside any project."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "signoff" / "signing-key.pem"
