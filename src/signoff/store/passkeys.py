"""Rows of approvers' passkeys (WebAuthn credentials), and the requests that need one.

``PasskeyRows`` is mixed into ``SqlTx``, ``PasskeyReads`` into ``SqlStore``. A passkey is
registered and removed by the kernel (``signoff.kernel.passkeys``) with its audit event;
its sign count moves with every approval it signs. A decision's assertion is a column of
``decisions`` (``DecisionRecord.assertion``), checked again at the claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from signoff.model import ApprovalRequest
from signoff.store.records import Passkey
from signoff.store.rows import REQUEST_COLUMNS, request_from_row

if TYPE_CHECKING:
    from signoff.store.sqltx import SqlTx

_COLUMNS = ("id, user_name, public_key, sign_count, name, rp_id, origin, created_at, "
            "last_used_at, removed_at")


def _passkey(row: Sequence[Any]) -> Passkey:
    id_, user, key, count, name, rp_id, origin, created, used, removed = row
    return Passkey(id=id_, user=user, public_key=key, sign_count=int(count), name=name,
                   rp_id=rp_id, origin=origin, created_at=float(created),
                   last_used_at=None if used is None else float(used),
                   removed_at=None if removed is None else float(removed))


class PasskeyRows:
    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def add_passkey(self, passkey: Passkey) -> bool:
        """Store a newly registered credential; ``False`` if its id is already stored."""
        cursor = self._exec(
            f"INSERT INTO passkeys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO NOTHING",
            (passkey.id, passkey.user, passkey.public_key, passkey.sign_count, passkey.name,
             passkey.rp_id, passkey.origin, passkey.created_at, passkey.last_used_at,
             passkey.removed_at))
        return bool(cursor.rowcount == 1)

    def passkey(self, credential_id: str) -> Passkey | None:
        """A credential by id, removed ones included (``removed_at``)."""
        row = self._exec(f"SELECT {_COLUMNS} FROM passkeys WHERE id = ?",
                         (credential_id,)).fetchone()
        return None if row is None else _passkey(row)

    def passkeys_of(self, user: str) -> list[Passkey]:
        rows = self._exec(f"SELECT {_COLUMNS} FROM passkeys WHERE user_name = ? "
                          "AND removed_at IS NULL ORDER BY created_at, id", (user,)).fetchall()
        return [_passkey(r) for r in rows]

    def remove_passkey(self, user: str, credential_id: str, *, at: float) -> bool:
        """Mark a credential removed (kept, for the history it signed)."""
        cursor = self._exec("UPDATE passkeys SET removed_at = ? WHERE user_name = ? AND id = ? "
                            "AND removed_at IS NULL", (at, user, credential_id))
        return bool(cursor.rowcount == 1)

    def use_passkey(self, credential_id: str, *, sign_count: int, at: float) -> bool:
        """Record a verified use: the new sign count, compare-and-set below it (two uses of
        one counter value never both count); ``False``: it moved meanwhile."""
        cursor = self._exec("UPDATE passkeys SET sign_count = ?, last_used_at = ? WHERE id = ? "
                            "AND removed_at IS NULL AND (sign_count < ? OR sign_count = 0)",
                            (sign_count, at, credential_id, sign_count))
        return bool(cursor.rowcount == 1)


class PasskeyReads:
    """Short reads; ``SqlStore`` supplies ``_reader``."""

    def _reader(self) -> AbstractContextManager[SqlTx]:
        raise NotImplementedError

    def passkeys_of(self, user: str) -> list[Passkey]:
        with self._reader() as tx:
            return tx.passkeys_of(user)

    def passkey(self, credential_id: str) -> Passkey | None:
        with self._reader() as tx:
            return tx.passkey(credential_id)

    def passkey_requests(self) -> list[ApprovalRequest]:
        """Requests whose approvals need a passkey and that were approved (whatever came of
        them since): what ``audit verify`` re-checks."""
        with self._reader() as tx:
            rows = tx._exec(f"SELECT {', '.join(REQUEST_COLUMNS)} FROM requests "
                            "WHERE passkey = 1 AND status NOT IN "
                            "('pending', 'rejected', 'expired', 'responded') "
                            "ORDER BY created_at, id").fetchall()
        return [request_from_row(r) for r in rows]
