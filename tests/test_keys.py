"""Signing keys: the key file's rules, JWKS and JWS round trips, and every refusal typed."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from signoff import keys
from signoff.errors import ConfigurationError, SignatureInvalid


def test_a_key_file_is_made_0600_in_a_0700_directory_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "signing-key.pem"
    made = keys.load_or_create(path)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    assert keys.load_or_create(path).kid == made.kid == keys.thumbprint(made.public)


def test_a_key_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "k.pem"
    keys.write(path, keys.SigningKey.generate())
    path.chmod(0o640)
    with pytest.raises(ConfigurationError) as caught:
        keys.load(path)
    assert caught.value.code == "signing_key_exposed"


def test_a_file_that_is_not_an_ed25519_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "k.pem"
    path.write_text("not a key")
    path.chmod(0o600)
    with pytest.raises(ConfigurationError) as caught:
        keys.load(path)
    assert caught.value.code == "signing_key_invalid"
    with pytest.raises(ConfigurationError) as missing:
        keys.load(tmp_path / "absent.pem")
    assert missing.value.code == "signing_key_unreadable"


def _make(path: str, out: multiprocessing.Queue[str]) -> None:
    out.put(keys.load_or_create(path).kid)


def test_two_processes_starting_at_once_share_one_key(tmp_path: Path) -> None:
    path = str(tmp_path / "shared" / "k.pem")
    context = multiprocessing.get_context("fork")
    out: multiprocessing.Queue[str] = context.Queue()
    workers = [context.Process(target=_make, args=(path, out)) for _ in range(6)]
    for worker in workers:
        worker.start()
    kids = {out.get(timeout=30) for _ in workers}
    for worker in workers:
        worker.join(timeout=30)
    assert kids == {keys.load(path).kid}
    assert [p for p in os.listdir(Path(path).parent) if p.endswith(".tmp")] == []


def test_a_jws_verifies_with_the_jwks_alone() -> None:
    key = keys.SigningKey.generate()
    token = key.jws({"request_id": "req_1", "n": 1}, typ="test+jws")
    published = keys.read_jwks(keys.jwks([key.jwk()]))
    header, payload = keys.verify_jws(token, published, typ="test+jws")
    assert header["kid"] == key.kid and payload == {"request_id": "req_1", "n": 1}


@pytest.mark.parametrize("damage", ["flip", "other_key", "typ", "parts", "not_b64", "huge"])
def test_a_damaged_or_foreign_jws_is_refused_with_its_code(damage: str) -> None:
    key, other = keys.SigningKey.generate(), keys.SigningKey.generate()
    token = key.jws({"a": 1}, typ="t")
    published = {key.kid: key.public}
    expected = {"flip": "signature_invalid", "other_key": "unknown_key", "typ": "malformed",
                "parts": "malformed", "not_b64": "malformed", "huge": "malformed"}[damage]
    if damage == "flip":
        head, _, sig = token.split(".")  # the payload changed, the signature kept
        changed = keys.b64url(json.dumps({"a": 2}).encode())
        token = f"{head}.{changed}.{sig}"
    elif damage == "other_key":
        token = other.jws({"a": 1}, typ="t")
    elif damage == "parts":
        token = token + ".x"
    elif damage == "not_b64":
        token = "!!!." + token.split(".", 1)[1]
    elif damage == "huge":
        token = "a" * (keys.MAX_TOKEN + 1)
    with pytest.raises(SignatureInvalid) as caught:
        keys.verify_jws(token, published, typ="u" if damage == "typ" else "t")
    assert caught.value.code == expected


def test_a_jwk_whose_kid_is_not_its_thumbprint_or_that_is_private_is_refused() -> None:
    key = keys.SigningKey.generate()
    with pytest.raises(SignatureInvalid) as wrong_kid:
        keys.key_from_jwk({**key.jwk(), "kid": "someone-else"})
    assert wrong_kid.value.code == "key_invalid"
    with pytest.raises(SignatureInvalid) as private:
        keys.key_from_jwk({**key.jwk(), "d": "secret"})
    assert private.value.code == "key_invalid"
    with pytest.raises(SignatureInvalid):
        keys.read_jwks({"keys": "nope"})
    assert keys.read_jwks({"keys": [{"kty": "RSA", "n": "x", "e": "AQAB"}]}) == {}


def test_the_default_key_lives_outside_any_project(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert keys.default_path() == tmp_path / "data" / "signoff" / "signing-key.pem"
