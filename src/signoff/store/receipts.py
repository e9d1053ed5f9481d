"""Rows of receipts: the signed word of each approval (``signoff.receipts``).

``ReceiptRows`` is mixed into ``SqlTx``, ``ReceiptReads`` into ``SqlStore``. The kernel
writes a request's receipt in the transaction that approves it; one request has at most
one (an approval is final: a request approved once never becomes pending again).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from signoff.store.sqltx import SqlTx


class ReceiptRows:
    def _defer(self, statement: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def put_receipt(self, request_id: str, token: str, *, kid: str, at: float) -> None:
        """Keep the receipt of ``request_id`` (sent with the transaction's next statement)."""
        self._defer("INSERT INTO receipts (request_id, token, kid, created_at) "
                    "VALUES (?, ?, ?, ?)", (request_id, token, kid, at))

    def receipt_of(self, request_id: str) -> str | None:
        row = self._exec("SELECT token FROM receipts WHERE request_id = ?",
                         (request_id,)).fetchone()
        return None if row is None else str(row[0])


class ReceiptReads:
    """Short reads; ``SqlStore`` supplies ``_reader``."""

    def _reader(self) -> AbstractContextManager[SqlTx]:
        raise NotImplementedError

    def receipt(self, request_id: str) -> str | None:
        """The receipt of a request's approval (a compact JWS), or ``None``: not approved,
        or approved by a server that had no key."""
        with self._reader() as tx:
            return tx.receipt_of(request_id)
