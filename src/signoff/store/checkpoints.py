"""Rows of the signed audit checkpoints (``signoff.checkpoints``): ``audit_signatures``.

``CheckpointRows`` is mixed into ``SqlTx``, ``CheckpointReads`` into ``SqlStore``. The table
is append-only like the audit (triggers, and PostgreSQL privileges): a checkpoint is never
changed, and is kept when a retention purge removes the events it covers (it holds an index
and a hash, nothing about a request), so a backup or export taken before the purge is still
proved by it. Verification checks those above the retention anchor.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from signoff.checkpoints import Checkpoint
    from signoff.keys import SigningKey
    from signoff.store.sqltx import SqlTx

INSERT = ("INSERT INTO audit_signatures (idx, kid, hash, at_us, signature) "
          "VALUES (?, ?, ?, ?, ?) ON CONFLICT (idx, kid) DO NOTHING")


def row_of(checkpoint: Checkpoint) -> tuple[int, str, str, int, str]:
    return (checkpoint.index, checkpoint.kid, checkpoint.hash, checkpoint.at_us,
            checkpoint.signature)


class CheckpointRows:
    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _one(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def add_audit_signature(self, checkpoint: Checkpoint) -> None:
        """Store a signed checkpoint (the same key's second one at an index is dropped)."""
        self._exec(INSERT, row_of(checkpoint))

    def sign_audit_head(self, key: SigningKey, *, at_us: int) -> Checkpoint | None:
        """Sign the audit head as this transaction sees it (``None``: the log is empty)."""
        row = self._one("SELECT idx, hash FROM audit_head WHERE id = 1")
        if row is None or int(row[0]) == 0:
            return None
        from signoff import checkpoints  # noqa: PLC0415 (signing: cryptography)

        checkpoint = checkpoints.sign(key, index=int(row[0]), hash=str(row[1]), at_us=at_us)
        self.add_audit_signature(checkpoint)
        return checkpoint


class CheckpointReads:
    """Short reads; ``SqlStore`` supplies ``_reader``."""

    def _reader(self) -> AbstractContextManager[SqlTx]:
        raise NotImplementedError

    def audit_signatures(self, *, after: int = 0) -> list[Checkpoint]:
        """Every signed checkpoint at an index above ``after``, by index then key."""
        with self._reader() as tx:
            rows = tx._exec("SELECT idx, hash, kid, at_us, signature FROM audit_signatures "
                            "WHERE idx > ? ORDER BY idx, kid", (after,)).fetchall()
        from signoff.checkpoints import Checkpoint  # noqa: PLC0415

        return [Checkpoint(int(idx), str(digest), str(kid), int(at_us), str(signature))
                for idx, digest, kid, at_us, signature in rows]

    def count_audit_signatures(self, *, upto: int) -> int:
        """How many checkpoints are at or below ``upto`` (kept past a retention purge)."""
        with self._reader() as tx:
            return int(tx._one("SELECT COUNT(*) FROM audit_signatures WHERE idx <= ?",
                               (upto,))[0])
