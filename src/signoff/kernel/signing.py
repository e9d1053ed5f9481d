"""What the gate signs with: its Ed25519 key, published for every verifier (a part of the gate).

A gate given a ``signoff.keys.SigningKey`` publishes the key's public half in the store
when it starts, so the JWKS (``jwks``) holds every key any server on this database has
signed with, rotated ones included, and hands the key down to the store, which signs the
audit head with it regularly (``signoff.checkpoints``). Without a key a gate signs
nothing, and says so where a signature is asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signoff import keys
from signoff.keys import SigningKey
from signoff.store.base import Store


class Signing:
    def __init__(self, store: Store, key: SigningKey | None, *,
                 clock: Callable[[], float]) -> None:
        self.store = store
        self.key = key
        self.clock = clock
        if key is not None:
            with store.transaction() as tx:
                tx.publish_key(key.jwk(), at=clock())
            store.sign_audit(key)  # signed audit checkpoints, off the commit path

    def jwks(self) -> dict[str, list[dict[str, Any]]]:
        """Every published public key, as a JWKS document (RFC 7517)."""
        published = self.store.published_keys()
        return keys.jwks({k: v for k, v in jwk.items() if k not in ("created_at", "retired_at")}
                         for jwk in published)
