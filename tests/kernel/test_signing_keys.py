"""A gate publishes its signing key where every verifier finds it: the JWKS holds the key
of every gate on the database, rotated ones included, and never a private half."""

from __future__ import annotations

from signoff import keys
from signoff.kernel.gate import Gate
from signoff.policy import Policy
from signoff.store.base import Store


def test_every_gate_on_one_database_publishes_its_key(policy: Policy, store: Store) -> None:
    first, second = keys.SigningKey.generate(), keys.SigningKey.generate()
    Gate(policy, store, signing_key=first)
    gate = Gate(policy, store, signing_key=second)
    Gate(policy, store, signing_key=first)  # started again: published once
    document = gate.jwks()
    assert sorted(k["kid"] for k in document["keys"]) == sorted([first.kid, second.kid])
    assert all("d" not in k and set(k) == {"kty", "crv", "x", "kid", "alg", "use"}
               for k in document["keys"])
    assert set(keys.read_jwks(document)) == {first.kid, second.kid}


def test_a_retired_key_stays_published(policy: Policy, store: Store) -> None:
    old, new = keys.SigningKey.generate(), keys.SigningKey.generate()
    Gate(policy, store, signing_key=old)
    with store.transaction() as tx:
        assert tx.retire_key(old.kid, at=1.0)
        assert not tx.retire_key(old.kid, at=2.0)
    gate = Gate(policy, store, signing_key=new)
    assert set(keys.read_jwks(gate.jwks())) == {old.kid, new.kid}
    retired = {k["kid"]: k["retired_at"] for k in store.published_keys()}
    assert retired == {old.kid: 1.0, new.kid: None}


def test_a_gate_without_a_key_publishes_nothing(policy: Policy, store: Store) -> None:
    assert Gate(policy, store).jwks() == {"keys": []}
