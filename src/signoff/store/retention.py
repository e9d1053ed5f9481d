"""``signoff db purge``: finished requests older than a date go; the audit stays verifiable.

A purge removes the requests that ended (a terminal status) before the date, with what
hangs off them: decisions, idempotency keys, timers, Slack message references, kept
reviews and the deliveries no longer due. Then the oldest audit events go, as a prefix
of the chain: up to the last event that is older than the date *and* older than every
event of a request still kept (a request's history is never cut while it is stored).

Before deleting, the purge records a checkpoint — the last removed event's index and
hash — and verification starts from the newest checkpoint (``verify(anchor=…)``). That
hash commits to every removed event, so an export or backup taken before still proves
them, against the hash the purge prints. The stores let the audit lose only events at
or below the newest checkpoint (schema migration "retention checkpoints"), and
checkpoints are append-only.

Work goes in transactions of at most ``BATCH`` rows, each with its own ``db.purged``
audit event: servers keep writing while a large purge runs, and a purge stopped half-way
leaves a consistent, verifiable store that the next run completes.

Kept whatever their age: grants and remembered rejections (a thread's policy memory,
in force until they expire or are lifted), threads, users and sessions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from signoff.audit import AuditKind, to_us
from signoff.errors import ConfigurationError
from signoff.model import RequestStatus
from signoff.store.base import Store
from signoff.store.sqlstore import SqlStore

BATCH = 1000  # rows per transaction (requests, or audit events): each holds writers ~0.1 s
_IDS_PER_STATEMENT = 500  # placeholders per IN (…) list, well inside both databases' limits
# The statuses no request leaves (signoff.kernel.lifecycle.TERMINAL, which a test holds
# this to; the store does not import the kernel).
FINISHED = tuple(sorted(s.value for s in (
    RequestStatus.REJECTED, RequestStatus.EXPIRED, RequestStatus.CANCELLED,
    RequestStatus.RESPONDED, RequestStatus.SUCCEEDED, RequestStatus.FAILED,
    RequestStatus.INVALIDATED)))
_IS_TERMINAL = f"status IN ({', '.join('?' * len(FINISHED))})"


@dataclass(frozen=True, slots=True)
class Purge:
    before: float
    requests: int  # removed (dry run: would be)
    events: int  # audit events removed (dry run: would be)
    anchor: tuple[int, str] | None  # the checkpoint the chain now starts after
    dry_run: bool = False

    @property
    def iso(self) -> str:
        return iso(self.before)

    def to_dict(self) -> dict[str, Any]:
        return {"before": iso(self.before), "requests": self.requests, "events": self.events,
                "checkpoint": None if self.anchor is None else
                {"index": self.anchor[0], "hash": self.anchor[1]},
                "dry_run": self.dry_run}


def iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")


def purge(store: Store, *, before: float, now: float, actor: str | None,
          dry_run: bool = False, batch: int = BATCH) -> Purge:
    """Remove what ended before ``before`` (seconds since the epoch, not after ``now``)."""
    if before > now:
        raise ConfigurationError(f"--before {iso(before)} is in the future: a purge removes "
                                 "only what ended before a past moment", code="purge_future")
    before_us = to_us(before)
    store.seal()  # PostgreSQL seals after commit: the prefix is cut from the chain as it is
    if not isinstance(store, SqlStore):
        raise TypeError("purge needs one of signoff's SQL stores")
    if dry_run:
        with store._reader() as tx:
            count = int(_sql(tx)._one(f"SELECT COUNT(*) FROM requests WHERE {_IS_TERMINAL} "
                                      "AND updated_at < ?", (*FINISHED, before))[0])
            top = _anchor(tx)
            end = _prefix_end(tx, before_us, top[0], kept=_KEPT_AFTER_PURGE,
                              params=(*FINISHED, before))
            would = None if end <= top[0] else _event_hash(tx, end)
        return Purge(before, count, end - top[0], would, dry_run=True)
    requests = 0
    while True:
        with store.transaction() as tx:
            removed = _purge_requests(_sql(tx), before, batch)
            if removed:
                tx.append_audit(AuditKind.DB_PURGED, at_us=to_us(now), request_id=None, actor=actor,
                                data={"before": iso(before), "requests": removed,
                                      "events": 0})
        requests += removed
        if removed < batch:
            break
    store.seal()
    # Read outside any write transaction: the scan takes a while at a million events, and
    # nothing can move into the prefix meanwhile (new events come after the head).
    with store._reader() as tx:
        top = _anchor(tx)
        end = _prefix_end(tx, before_us, top[0], kept="SELECT id FROM requests", params=())
    with store.transaction() as tx:
        # Reviews kept for calls that never became a request (the reviewer approved them).
        _sql(tx)._exec("DELETE FROM reviews WHERE created_at < ? AND NOT EXISTS (SELECT 1 "
                       "FROM requests r WHERE r.thread_id = reviews.thread_id AND "
                       "r.call_id = reviews.call_id)", (before,))
    events = 0
    anchor: tuple[int, str] | None = None
    while top[0] < end:
        upto = min(top[0] + batch, end)
        with store.transaction() as tx:
            sql = _sql(tx)
            anchor = _event_hash(tx, upto)
            at_us = int(sql._one("SELECT at_us FROM audit WHERE idx = ?", (upto,))[0])
            # The checkpoint first: the stores refuse to delete events above it.
            sql._exec("INSERT INTO audit_checkpoints (idx, hash, at_us, before_us, created_at, "
                      "actor) VALUES (?, ?, ?, ?, ?, ?)",
                      (upto, anchor[1], at_us, before_us, now, actor))
            removed = int(sql._exec("DELETE FROM audit WHERE idx > ? AND idx <= ?",
                                    (top[0], upto)).rowcount)
            tx.append_audit(AuditKind.DB_PURGED, at_us=to_us(now), request_id=None, actor=actor,
                            data={"before": iso(before), "requests": 0, "events": removed,
                                  "checkpoint": {"index": upto, "hash": anchor[1]}})
        events += removed
        top = anchor
    return Purge(before, requests, events, anchor)


# In a dry run nothing is removed yet: the requests kept are those the purge would keep.
_KEPT_AFTER_PURGE = f"SELECT id FROM requests WHERE NOT ({_IS_TERMINAL} AND updated_at < ?)"


def _sql(tx: object) -> Any:
    """Both stores' transactions are ``SqlTx``: the purge speaks SQL to them directly."""
    return tx


def _anchor(tx: object) -> tuple[int, str]:
    row = _sql(tx)._one("SELECT idx, hash FROM audit_checkpoints ORDER BY idx DESC LIMIT 1")
    return (0, "") if row is None else (int(row[0]), str(row[1]))


def _event_hash(tx: object, index: int) -> tuple[int, str]:
    return index, str(_sql(tx)._one("SELECT hash FROM audit WHERE idx = ?", (index,))[0])


def _prefix_end(tx: object, before_us: int, top: int, *, kept: str,
                params: Sequence[Any]) -> int:
    """The last index that may go: every event up to it is older than ``before_us`` and
    none belongs to a request that stays (nor is unsealed: ``audit`` holds sealed ones)."""
    sql = _sql(tx)
    head = int(sql._one("SELECT idx FROM audit_head WHERE id = 1")[0])
    newer = sql._one("SELECT MIN(idx) FROM audit WHERE idx > ? AND at_us >= ?",
                     (top, before_us))[0]
    limit = head + 1 if newer is None else int(newer)
    kept_first = sql._one(f"SELECT MIN(idx) FROM audit WHERE idx > ? AND idx < ? AND "
                          f"request_id IN ({kept})", (top, limit, *params))[0]
    if kept_first is not None:
        limit = int(kept_first)
    return max(top, limit - 1)


def _purge_requests(sql: Any, before: float, batch: int) -> int:
    # created_at <= updated_at: the bound keeps the index scan to the requests made before
    # the date, instead of walking every newer one to find the last few.
    rows = sql._exec(f"SELECT id, thread_id, call_id FROM requests WHERE {_IS_TERMINAL} "
                     "AND updated_at < ? AND created_at < ? ORDER BY created_at, id LIMIT ?",
                     (*FINISHED, before, before, batch)).fetchall()
    ids = [str(r[0]) for r in rows]
    for start in range(0, len(ids), _IDS_PER_STATEMENT):
        chunk = ids[start:start + _IDS_PER_STATEMENT]
        marks = ", ".join("?" * len(chunk))
        for statement in (f"DELETE FROM decisions WHERE request_id IN ({marks})",
                          f"DELETE FROM receipts WHERE request_id IN ({marks})",
                          f"DELETE FROM idempotency WHERE request_id IN ({marks})",
                          f"DELETE FROM notify_timers WHERE request_id IN ({marks})",
                          f"DELETE FROM slack_messages WHERE request_id IN ({marks})",
                          f"DELETE FROM deliveries WHERE request_key IN ({marks}) "
                          "AND status <> 'pending'",
                          f"DELETE FROM requests WHERE id IN ({marks})"):
            sql._exec(statement, chunk)
    reviewed = [(thread_id, call_id) for _, thread_id, call_id in rows if thread_id is not None]
    if reviewed:
        sql.cursor.executemany(sql.dialect.sql(
            "DELETE FROM reviews WHERE thread_id = ? AND call_id = ?"), reviewed)
    return len(ids)
