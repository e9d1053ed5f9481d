"""What the gate signs with: its Ed25519 key, published for every verifier (a part of the gate).

A gate given a ``signoff.keys.SigningKey`` publishes the key's public half in the store
when it starts, so the JWKS (``jwks``) holds every key any server on this database has
signed with, rotated ones included, and hands the key down to the store, which signs the
audit head with it regularly (``signoff.checkpoints``). A key retired by a rotation is
refused at start (``signing_key_retired``): it stays published, so old receipts verify,
and must sign nothing new. Without a key a gate signs nothing, and says so where a
signature is asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from signoff.audit import AuditKind, to_us
from signoff.errors import ConfigurationError, StoreError
from signoff.store.base import Store

if TYPE_CHECKING:
    from signoff.keys import SigningKey


class Signing:
    def __init__(self, store: Store, key: SigningKey | None, *,
                 clock: Callable[[], float]) -> None:
        self.store = store
        self.key = key
        self.clock = clock
        if key is not None:
            try:
                with store.transaction() as tx:
                    tx.publish_key(key.jwk(), at=clock())
            except StoreError as exc:
                # A read-only database still serves its reads; nothing is approved (every
                # write is refused), so nothing needs signing there.
                if exc.code != "store_read_only":
                    raise
                return
            if any(k["kid"] == key.kid and k["retired_at"] is not None
                   for k in store.published_keys()):
                raise ConfigurationError(
                    f"the signing key {key.kid} was retired by a rotation: give this server "
                    "its successor (signoff keys rotate wrote it)", code="signing_key_retired")
            store.sign_audit(key)  # signed audit checkpoints, off the commit path

    def jwks(self) -> dict[str, list[dict[str, Any]]]:
        """Every published public key, as a JWKS document (RFC 7517)."""
        published = self.store.published_keys()
        from signoff import keys  # noqa: PLC0415

        return keys.jwks({k: v for k, v in jwk.items() if k not in ("created_at", "retired_at")}
                         for jwk in published)

    def published(self) -> list[dict[str, Any]]:
        """Every published key with when it was published and retired (``keys list``)."""
        return self.store.published_keys()

    def rotate(self, successor: SigningKey, *, actor: str | None) -> str | None:
        """Retire this gate's key and publish ``successor`` in one transaction, with a
        ``key.rotated`` event; from now on the gate signs with ``successor``. Returns the
        retired ``kid`` (``None``: the gate had no key, the successor is just published)."""
        retired = self.key.kid if self.key is not None else None
        now = self.clock()
        with self.store.transaction() as tx:
            if retired is not None:
                tx.retire_key(retired, at=now)
            tx.publish_key(successor.jwk(), at=now)
            tx.append_audit(AuditKind.KEY_ROTATED, at_us=to_us(now), request_id=None,
                            actor=actor, data={"retired": retired, "published": successor.kid})
        self.key = successor
        return retired
