"""Rows of what signoff signs with: the public keys every server has signed with.

``SignatureRows`` is mixed into ``SqlTx``, ``SignatureReads`` into ``SqlStore``. A server
publishes its key's public half when it starts (``publish_key``); the JWKS it serves is
every key published here, so several servers on one PostgreSQL each verify what the
others signed, and a key rotated out stays published for what it signed before.
Private keys are never stored: they stay in their files (``signoff.keys``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from signoff.store.sqltx import SqlTx


class SignatureRows:
    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def publish_key(self, jwk: dict[str, Any], *, at: float) -> bool:
        """Publish a public JWK (its ``kid`` names it); ``False`` if it was already."""
        cursor = self._exec("INSERT INTO signing_keys (kid, jwk, created_at) VALUES (?, ?, ?) "
                            "ON CONFLICT (kid) DO NOTHING",
                            (str(jwk["kid"]), json.dumps(jwk, sort_keys=True), at))
        return bool(cursor.rowcount == 1)

    def retire_key(self, kid: str, *, at: float) -> bool:
        """Mark a key as no longer signing (it stays published, for verification)."""
        cursor = self._exec("UPDATE signing_keys SET retired_at = ? WHERE kid = ? AND "
                            "retired_at IS NULL", (at, kid))
        return bool(cursor.rowcount == 1)


class SignatureReads:
    """Short reads; ``SqlStore`` supplies ``_reader``."""

    def _reader(self) -> AbstractContextManager[SqlTx]:
        raise NotImplementedError

    def published_keys(self) -> list[dict[str, Any]]:
        """Every published public JWK, oldest first, with ``created_at`` and ``retired_at``."""
        with self._reader() as tx:
            rows = tx._exec("SELECT jwk, created_at, retired_at FROM signing_keys "
                            "ORDER BY created_at, kid").fetchall()
        return [{**json.loads(jwk), "created_at": float(created), "retired_at": retired}
                for jwk, created, retired in rows]
