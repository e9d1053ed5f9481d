"""Rows of notifications: channel cursors, deliveries and admin-registered webhook endpoints.

``DeliveryRows`` is mixed into ``SqlTx``, ``DeliveryReads`` into ``SqlStore``.
A delivery is one event for one channel. It is claimed under a lease (the
claim commits before anything is sent, so no request transaction ever waits
on a network call), and settled only by the claim that holds the lease — an
attempt that outlived its lease and was claimed again elsewhere can't
overwrite the newer attempt's result. The claim query keeps a request's events
in order per channel: an event waits while an earlier one of the same request
is still undelivered on that channel.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from signoff.store.records import (
    DEAD,
    DELIVERED,
    PENDING,
    Delivery,
    StoredEndpoint,
    delivery_id,
    event_id,
)

if TYPE_CHECKING:
    from signoff.store.dialect import Dialect
    from signoff.store.sqltx import SqlTx

# The values moved to ``signoff.store.records`` (the contract's vocabulary), still named here.
__all__ = ["DEAD", "DELIVERED", "PENDING", "Delivery", "DeliveryReads", "DeliveryRows",
           "StoredEndpoint", "delivery_from_row", "delivery_id", "event_id"]

_COLUMNS = ("id, channel, event_index, event_type, request_key, payload, status, attempts, "
            "next_at, lease_until, lease_owner, event_at, created_at, delivered_at, "
            "last_status, last_error")


def delivery_from_row(row: Sequence[Any]) -> Delivery:
    (id_, channel, index, type_, key, payload, status, attempts, next_at, lease_until,
     owner, event_at, created_at, delivered_at, last_status, last_error) = row
    return Delivery(id=id_, channel=channel, event_index=int(index), event_type=type_,
                    request_key=key, payload=payload, status=status, attempts=int(attempts),
                    next_at=float(next_at), lease_until=lease_until, lease_owner=owner,
                    event_at=float(event_at), created_at=float(created_at),
                    delivered_at=delivered_at, last_status=last_status, last_error=last_error)


def _endpoint(row: Sequence[Any]) -> StoredEndpoint:
    name, url, secret, filters, created_at, created_by = row
    return StoredEndpoint(name=name, url=url, secret=secret, filters=json.loads(filters),
                          created_at=float(created_at), created_by=created_by)


class DeliveryRows:
    """Transaction methods; ``SqlTx`` supplies ``_exec``, ``_one`` and ``dialect``."""

    dialect: Dialect

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _one(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _defer(self, statement: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError

    # ---- fan-out ---------------------------------------------------------------------------

    def channel_cursor(self, channel: str) -> int:
        """How far events were fanned out to ``channel``, its row held until commit. A
        channel seen for the first time starts at the audit's head: it is told of what
        happens from now on, not of the past."""
        self._defer("INSERT INTO notify_cursor (name, idx) SELECT ?, idx FROM audit_head "
                    "WHERE id = 1 ON CONFLICT (name) DO NOTHING", (channel,))
        row = self._one(f"SELECT idx FROM notify_cursor WHERE name = ?"
                        f"{self.dialect.lock_suffix}", (channel,))
        return int(row[0])

    def set_channel_cursor(self, channel: str, index: int) -> None:
        self._defer("UPDATE notify_cursor SET idx = ? WHERE name = ?", (index, channel))

    def start_channel_cursor(self, channel: str) -> None:
        """Start ``channel`` at the audit's head now, in this transaction: an endpoint
        registered hears everything committed after its registration, however late a
        notifier first sees it (starting at first sight lost the events in between), and
        one registered again under an old name starts afresh. On PostgreSQL an event
        committed but not yet sealed is numbered above the head and told too: the caller
        seals first, so only one committed in that moment can be, and never one fewer."""
        self._exec("INSERT INTO notify_cursor (name, idx) SELECT ?, idx FROM audit_head "
                   "WHERE id = 1 ON CONFLICT (name) DO UPDATE SET idx = excluded.idx",
                   (channel,))

    def drop_channel_cursor(self, channel: str) -> None:
        self._exec("DELETE FROM notify_cursor WHERE name = ?", (channel,))

    def insert_delivery(self, delivery: Delivery) -> None:
        self._exec(f"INSERT INTO deliveries ({_COLUMNS}) VALUES "
                   "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                   "ON CONFLICT (channel, event_index) DO NOTHING", (
                       delivery.id, delivery.channel, delivery.event_index,
                       delivery.event_type, delivery.request_key, delivery.payload,
                       delivery.status, delivery.attempts, delivery.next_at,
                       delivery.lease_until, delivery.lease_owner, delivery.event_at,
                       delivery.created_at, delivery.delivered_at, delivery.last_status,
                       delivery.last_error))

    # ---- claims ----------------------------------------------------------------------------

    def due_deliveries(self, channels: Sequence[str], *, now: float,
                       limit: int) -> list[Delivery]:
        """Pending deliveries of ``channels`` due at ``now`` and not leased, each the first
        undelivered event of its request on its channel; their rows held until commit
        (skipping rows another server holds)."""
        if not channels:
            return []
        marks = ", ".join("?" for _ in channels)
        # Each (channel, request)'s first pending event, found by one grouped scan and a
        # join — not a subquery per row, which the planner may turn into a scan per row.
        lock = self.dialect.skip_locked_suffix.replace("FOR UPDATE", "FOR UPDATE OF d")
        columns = ", ".join(f"d.{c.strip()}" for c in _COLUMNS.split(","))
        rows = self._exec(
            f"SELECT {columns} FROM deliveries d JOIN (SELECT channel, request_key, "
            "MIN(event_index) AS first FROM deliveries WHERE status = 'pending' "
            f"AND channel IN ({marks}) GROUP BY channel, request_key) f "
            "ON f.channel = d.channel AND f.request_key = d.request_key "
            "AND f.first = d.event_index "
            "WHERE d.status = 'pending' AND d.next_at <= ? "
            "AND (d.lease_until IS NULL OR d.lease_until <= ?) "
            f"ORDER BY d.event_index LIMIT ?{lock}",
            (*channels, now, now, limit)).fetchall()
        return [delivery_from_row(r) for r in rows]

    def lease_delivery(self, delivery: Delivery, *, owner: str, until: float) -> bool:
        cursor = self._exec("UPDATE deliveries SET lease_owner = ?, lease_until = ?, "
                            "attempts = attempts + 1 WHERE id = ? AND status = 'pending' "
                            "AND attempts = ?", (owner, until, delivery.id, delivery.attempts))
        return bool(cursor.rowcount == 1)

    def lease_owners(self) -> list[str]:
        rows = self._exec("SELECT DISTINCT lease_owner FROM deliveries WHERE status = 'pending' "
                          "AND lease_owner IS NOT NULL").fetchall()
        return [r[0] for r in rows]

    def release_leases(self, owner: str) -> int:
        """Free the leases ``owner`` holds (it is known to be gone): due again at once."""
        cursor = self._exec("UPDATE deliveries SET lease_owner = NULL, lease_until = NULL "
                            "WHERE status = 'pending' AND lease_owner = ?", (owner,))
        return int(cursor.rowcount)

    def settle_delivery(self, delivery_id: str, *, owner: str, attempts: int, status: str,
                        next_at: float, at: float, last_status: int | None,
                        last_error: str | None) -> bool:
        """Record an attempt's result, if that attempt still holds the lease."""
        cursor = self._exec(
            "UPDATE deliveries SET status = ?, next_at = ?, lease_owner = NULL, "
            "lease_until = NULL, delivered_at = ?, last_status = ?, last_error = ? "
            "WHERE id = ? AND lease_owner = ? AND attempts = ? AND status = 'pending'",
            (status, next_at, at if status == DELIVERED else None, last_status,
             last_error, delivery_id, owner, attempts))
        return bool(cursor.rowcount == 1)

    def replay_deliveries(self, *, now: float, ids: Sequence[str] = (),
                          channel: str | None = None, status: str | None = None,
                          after_index: int | None = None) -> list[str]:
        """Send again: the deliveries named, or those matching the filters, become pending and
        due now with a fresh count of attempts. Their ids (the events' ids) do not change."""
        clauses: list[str] = ["status <> 'pending'"]  # a pending one is sent anyway
        params: list[Any] = []
        if ids:
            clauses.append(f"id IN ({', '.join('?' for _ in ids)})")
            params.extend(ids)
        if channel is not None:
            clauses.append("channel = ?")
            params.append(channel)
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        if after_index is not None:
            clauses.append("event_index > ?")
            params.append(after_index)
        where = " AND ".join(clauses)
        rows = self._exec(f"SELECT id FROM deliveries WHERE {where} ORDER BY event_index"
                          f"{self.dialect.lock_suffix}", params).fetchall()
        chosen = [r[0] for r in rows]
        for start in range(0, len(chosen), 500):
            part = chosen[start:start + 500]
            self._exec(f"UPDATE deliveries SET status = 'pending', attempts = 0, next_at = ?, "
                       "lease_owner = NULL, lease_until = NULL, last_error = NULL "
                       f"WHERE id IN ({', '.join('?' for _ in part)})", (now, *part))
        return chosen

    # ---- endpoints -------------------------------------------------------------------------

    def insert_endpoint(self, endpoint: StoredEndpoint) -> bool:
        cursor = self._exec("INSERT INTO webhook_endpoints (name, url, secret, filters, "
                            "created_at, created_by) VALUES (?, ?, ?, ?, ?, ?) "
                            "ON CONFLICT (name) DO NOTHING",
                            (endpoint.name, endpoint.url, endpoint.secret,
                             json.dumps(endpoint.filters, sort_keys=True), endpoint.created_at,
                             endpoint.created_by))
        return bool(cursor.rowcount == 1)

    def delete_endpoint(self, name: str) -> bool:
        cursor = self._exec("DELETE FROM webhook_endpoints WHERE name = ?", (name,))
        return bool(cursor.rowcount == 1)


    # ---- timers ----------------------------------------------------------------------------

    def add_timer(self, request_id: str, kind: str, *, due_at: float, rule: int) -> None:
        self._defer("INSERT INTO notify_timers (request_id, kind, due_at, rule) VALUES "
                    "(?, ?, ?, ?) ON CONFLICT (request_id, kind) DO NOTHING",
                    (request_id, kind, due_at, rule))

    def due_timers(self, *, now: float, limit: int) -> list[tuple[str, str, float, int]]:
        """``(request_id, kind, due_at, rule)`` of timers due and not yet fired, held until
        commit (skipping those another server holds)."""
        rows = self._exec("SELECT request_id, kind, due_at, rule FROM notify_timers "
                          "WHERE done_at IS NULL AND due_at <= ? ORDER BY due_at LIMIT ?"
                          f"{self.dialect.skip_locked_suffix}", (now, limit)).fetchall()
        return [(r[0], r[1], float(r[2]), int(r[3])) for r in rows]

    def finish_timer(self, request_id: str, kind: str, *, at: float) -> None:
        self._exec("UPDATE notify_timers SET done_at = ? WHERE request_id = ? AND kind = ?",
                   (at, request_id, kind))

    # ---- slack -----------------------------------------------------------------------------

    def put_slack_message(self, request_id: str, *, channel: str, ts: str, at: float) -> None:
        self._exec("INSERT INTO slack_messages (request_id, channel, ts, created_at) "
                   "VALUES (?, ?, ?, ?) ON CONFLICT (request_id) DO UPDATE SET "
                   "channel = excluded.channel, ts = excluded.ts", (request_id, channel, ts, at))

    def first_use_of_signature(self, signature: str, *, at: float, keep: float) -> bool:
        """Record an interaction's signature; ``False`` if it was used before (a replay).
        Signatures older than ``keep`` seconds are forgotten: their timestamps are out of
        the verifier's window by then."""
        self._exec("DELETE FROM slack_seen WHERE seen_at < ?", (at - keep,))
        cursor = self._exec("INSERT INTO slack_seen (signature, seen_at) VALUES (?, ?) "
                            "ON CONFLICT (signature) DO NOTHING", (signature, at))
        return bool(cursor.rowcount == 1)


class DeliveryReads:
    """Short reads; ``SqlStore`` supplies ``_reader``."""

    def _reader(self) -> AbstractContextManager[SqlTx]:
        raise NotImplementedError

    def deliveries(self, *, channel: str | None = None, status: str | None = None,
                   request_id: str | None = None, before_index: int | None = None,
                   limit: int = 100) -> list[Delivery]:
        """The delivery log, newest event first (``before_index``: the next page)."""
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("channel", channel), ("status", status),
                              ("request_key", request_id)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if before_index is not None:
            clauses.append("event_index < ?")
            params.append(before_index)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._reader() as tx:
            rows = tx._exec(f"SELECT {_COLUMNS} FROM deliveries{where} "
                            "ORDER BY event_index DESC, channel LIMIT ?",
                            (*params, limit)).fetchall()
        return [delivery_from_row(r) for r in rows]

    def delivery(self, delivery_id: str) -> Delivery | None:
        with self._reader() as tx:
            row = tx._one(f"SELECT {_COLUMNS} FROM deliveries WHERE id = ?", (delivery_id,))
        return None if row is None else delivery_from_row(row)

    def delivery_counts(self) -> dict[tuple[str, str], int]:
        """``(channel, status) → count`` over the whole log."""
        with self._reader() as tx:
            rows = tx._exec("SELECT channel, status, COUNT(*) FROM deliveries "
                            "GROUP BY channel, status").fetchall()
        return {(r[0], r[1]): int(r[2]) for r in rows}

    def next_delivery_due(self) -> float | None:
        """When the earliest pending delivery may next be attempted (a wake-up hint)."""
        with self._reader() as tx:
            row = tx._one("SELECT MIN(CASE WHEN lease_until IS NOT NULL AND lease_until > "
                          "next_at THEN lease_until ELSE next_at END) FROM deliveries "
                          "WHERE status = 'pending'")
        return None if row is None or row[0] is None else float(row[0])

    def next_timer_due(self) -> float | None:
        with self._reader() as tx:
            row = tx._one("SELECT MIN(due_at) FROM notify_timers WHERE done_at IS NULL")
        return None if row is None or row[0] is None else float(row[0])

    def timers(self, request_id: str) -> list[tuple[str, float, float | None]]:
        """``(kind, due_at, done_at)`` of a request's timers."""
        with self._reader() as tx:
            rows = tx._exec("SELECT kind, due_at, done_at FROM notify_timers WHERE "
                            "request_id = ? ORDER BY due_at", (request_id,)).fetchall()
        return [(r[0], float(r[1]), r[2]) for r in rows]

    def slack_message(self, request_id: str) -> tuple[str, str] | None:
        """``(channel, ts)`` of the request's Slack message."""
        with self._reader() as tx:
            row = tx._one("SELECT channel, ts FROM slack_messages WHERE request_id = ?",
                          (request_id,))
        return None if row is None else (row[0], row[1])

    def webhook_endpoints(self) -> list[StoredEndpoint]:
        with self._reader() as tx:
            rows = tx._exec("SELECT name, url, secret, filters, created_at, created_by "
                            "FROM webhook_endpoints ORDER BY name").fetchall()
        return [_endpoint(r) for r in rows]
