"""The SQL both backends share: one ``SqlTx`` over a DB-API cursor, with a dialect.

Statements are written once with ``?`` placeholders; the PostgreSQL dialect
(``signoff.store.dialect``) rewrites them to ``%s`` and adds ``FOR UPDATE`` /
``SKIP LOCKED`` where rows must be held. Arguments and audit data are stored as TEXT
so the canonical bytes come back exactly as they went in.

Here: requests, decisions, idempotency keys and the moves that guard them. The audit
events a transaction appends are an object it holds (``signoff.store.auditlog``); the
other row groups are mixed in (``accounts``, ``threadrows``, ``deliveries``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from signoff.audit import AuditEvent, AuditKind, canonical_data
from signoff.identity import Identity
from signoff.model import ApprovalRequest, DecisionRecord, RequestStatus
from signoff.store.accounts import AccountRows
from signoff.store.auditlog import AuditLog
from signoff.store.checkpoints import CheckpointRows
from signoff.store.deliveries import DeliveryRows
from signoff.store.dialect import Dialect, typed
from signoff.store.insights import asked_by
from signoff.store.passkeys import PasskeyRows
from signoff.store.receipts import ReceiptRows
from signoff.store.records import Approvals, Event
from signoff.store.rows import (
    DECISION_COLUMNS,
    ENCODERS,
    REQUEST_COLUMNS,
    audit_from_row,
    decision_from_row,
    encode,
    identity_from_row,
    replaced,
    request_from_row,
)
from signoff.store.signatures import SignatureRows
from signoff.store.threadrows import ThreadRows

_SELECT_REQUEST = f"SELECT {', '.join(REQUEST_COLUMNS)} FROM requests"
# A request and one user, one statement: what a decision reads under the request's lock.
_SELECT_REQUEST_AND_USER = (
    f"SELECT {', '.join('r.' + c for c in REQUEST_COLUMNS)}, u.name, u.kind, u.roles, "
    "u.disabled FROM requests r LEFT JOIN users u ON u.name = ? WHERE r.id = ?")
# The approvals of the hash a request ``{r}`` would run, as one text the database writes:
# read with the request, then required unchanged by a claim that did not hold the row.
_APPROVAL_STAMP = (
    "(SELECT COALESCE(string_agg(concat_ws(',', quote_literal(d.approver), "
    "quote_nullable(u.kind), quote_nullable(u.roles), quote_nullable(u.disabled)), ';' "
    "ORDER BY d.created_at, d.id), '') FROM decisions d LEFT JOIN users u "
    "ON u.name = d.approver WHERE d.request_id = {r}.id AND d.kind IN ('approve', 'edit') "
    "AND d.args_hash = COALESCE({r}.approved_hash, {r}.args_hash))")
# A request, the stamp of its approvals, and the approvals (a row each, or one of NULLs).
_SELECT_REQUEST_TO_RUN = (
    f"SELECT {', '.join('r.' + c for c in REQUEST_COLUMNS)}, "
    f"{_APPROVAL_STAMP.format(r='r')}, d.approver, u.kind, u.roles, u.disabled "
    "FROM requests r LEFT JOIN decisions d ON d.request_id = r.id "
    "AND d.kind IN ('approve', 'edit') AND d.args_hash = COALESCE(r.approved_hash, r.args_hash) "
    "LEFT JOIN users u ON u.name = d.approver WHERE r.id = ? ORDER BY d.created_at, d.id")
# The arguments a request was written with, as a guard on a move that did not read them.
_ARGS_AS_WRITTEN = ("AND requests.args = ? AND requests.args_hash = ? "
                    "AND requests.approved_args IS NOT DISTINCT FROM ? "
                    "AND requests.approved_hash IS NOT DISTINCT FROM ? ")
# What a claim that did not hold the row requires of it, beside its version.
_AS_READ = _ARGS_AS_WRITTEN + f"AND {_APPROVAL_STAMP.format(r='requests')} = ?"
# What a move of a request this process knows but did not read requires of it, beside its
# version: still pending, with the arguments known, and the deciding user stored as known.
_AS_KNOWN = ("AND requests.status = 'pending' " + _ARGS_AS_WRITTEN
             + "AND EXISTS (SELECT 1 FROM users WHERE users.name = ? AND users.kind = ? "
             "AND users.roles = ? AND users.disabled = 0)")


# ``asked_by`` is written with the row, from its reasons (``signoff.store.insights``).
_INSERT_REQUEST = (f"INSERT INTO requests ({', '.join(REQUEST_COLUMNS)}, asked_by) "
                   f"VALUES ({', '.join('?' for _ in REQUEST_COLUMNS)}, ?)")

_INSERT_DECISION = (f"INSERT INTO decisions ({', '.join(DECISION_COLUMNS)}) "
                    f"VALUES ({', '.join('?' for _ in DECISION_COLUMNS)})")
assert DECISION_COLUMNS == ("id", "request_id", "kind", "approver", "created_at", "args_hash",
                             "reason", "alternatives", "args", "message", "scope", "assertion")


@functools.lru_cache(maxsize=64)
def _update_sql(names: tuple[str, ...]) -> str:
    """The compare-and-set UPDATE for one set of changed columns (the text built once)."""
    return (f"UPDATE requests SET {', '.join(f'{name} = ?' for name in names)} "
            "WHERE id = ? AND version = ?")


class SqlTx(AccountRows, ThreadRows, DeliveryRows, SignatureRows, PasskeyRows,
            CheckpointRows, ReceiptRows):
    """A transaction over one DB-API cursor, in one dialect. It holds its audit events
    (``self.audit``, an ``AuditLog``); the stateless row groups are mixed in, since the
    ``Tx`` contract is one flat surface: users, accounts, links and sessions
    (``AccountRows``), thread memory and modes (``ThreadRows``), notifications
    (``DeliveryRows``)."""

    def __init__(self, cursor: Any, dialect: Dialect,
                 head_hint: tuple[int, str] | None = None) -> None:
        self.cursor = cursor
        self.dialect = dialect
        self.notified: list[str] = []
        # Wrote what ``signoff.store.thread_memory`` remembers (a mode, rejection, grant or use).
        self.memory_changed = False
        self.audit = AuditLog(self, head_hint)  # the events it appends (signoff.store.auditlog)
        # PostgreSQL's ``Batch`` keeps writes for the next round trip (signoff.store.pgbatch).
        self._batch: Any = cursor if hasattr(cursor, "defer") else None
        self._held: set[str] = set()  # request rows this transaction holds (FOR UPDATE)
        # Requests taken as held unread (``expect_as_known``): what their move requires.
        self._known: dict[str, tuple[Any, ...]] = {}

    def _exec(self, statement: str, params: Sequence[Any] = (), *, commit: bool = False) -> Any:
        """Run ``statement``; ``commit``: it ends the transaction, and PostgreSQL's ``COMMIT``
        goes with it in the same round trip (SQLite commits when the transaction closes)."""
        try:
            if commit and self._batch is not None:
                self._batch.execute(self.dialect.sql(statement), tuple(params), commit=True)
                return self.cursor
            self.cursor.execute(self.dialect.sql(statement), tuple(params))
        except Exception as exc:  # a database failure or refusal: typed (signoff.store.faults)
            found = typed(exc)
            if found is exc:
                raise
            raise found from exc
        return self.cursor

    def _one(self, statement: str, params: Sequence[Any] = ()) -> Any:
        return self._exec(statement, params).fetchone()

    def _defer(self, statement: str, params: Sequence[Any] = ()) -> None:
        """A write whose result nobody reads: PostgreSQL sends it with the transaction's next
        statement or its commit (one round trip for them all); SQLite runs it now."""
        if self._batch is None:
            self._exec(statement, params)
        else:
            self._batch.defer(self.dialect.sql(statement), tuple(params))

    def commit(self) -> None:
        """PostgreSQL: send the writes kept back, with ``COMMIT`` (the store calls it)."""
        if self._known:  # nothing would have checked what was taken for granted
            raise RuntimeError(f"request {next(iter(self._known))} was taken as known but "
                               "not moved: its writes were checked against nothing")
        self.audit.flush()
        if self._batch is not None:
            try:
                self._batch.commit()
            except Exception as exc:
                found = typed(exc)
                if found is exc:
                    raise
                raise found from exc

    def audit_after(self, index: int, limit: int) -> list[AuditEvent]:
        """Up to ``limit`` audit events after ``index``, in order, read in this transaction."""
        rows = self._exec("SELECT idx, at_us, kind, request_id, actor, data, prev_hash, hash "
                          "FROM audit WHERE idx > ? ORDER BY idx LIMIT ?",
                          (index, limit)).fetchall()
        return [audit_from_row(r) for r in rows]

    def created_after(self, index: int, limit: int
                      ) -> tuple[int, list[tuple[int, ApprovalRequest | None]]]:
        """``(head, [(index, request), …])``: the audit's head as this transaction sees it,
        and up to ``limit`` ``request.created`` events after ``index`` and no later than that
        head, in order, each with its request (``None``: gone) — what the timer pass needs
        of the log, without reading the events it does not, nor any event's data."""
        head = int(self._one("SELECT idx FROM audit_head WHERE id = 1")[0])
        rows = self._exec(
            f"SELECT a.idx, {', '.join('r.' + c for c in REQUEST_COLUMNS)} FROM audit a "
            "LEFT JOIN requests r ON r.id = a.request_id WHERE a.idx > ? AND a.idx <= ? "
            f"AND a.kind = '{AuditKind.REQUEST_CREATED}' ORDER BY a.idx LIMIT ?",
            (index, head, limit)).fetchall()
        return head, [(int(row[0]), None if row[1] is None else request_from_row(row[1:]))
                      for row in rows]

    # ---- requests ----------------------------------------------------------------------------

    def get_request(self, request_id: str, *, lock: bool = False) -> ApprovalRequest | None:
        suffix = self.dialect.lock_suffix if lock else ""
        row = self._one(f"{_SELECT_REQUEST} WHERE id = ?{suffix}", (request_id,))
        if row and lock:
            self._held.add(request_id)
        return request_from_row(row) if row else None

    def get_request_and_user(self, request_id: str, user: str, *, lock: bool = True
                             ) -> tuple[ApprovalRequest | None, Identity | None]:
        """The request, held until commit (``lock``), and ``user`` as stored now (``None``:
        no such user) — one statement. Without the request there is no row, and no user
        either."""
        suffix = " FOR UPDATE OF r" if lock and self.dialect.lock_suffix else ""
        row = self._one(f"{_SELECT_REQUEST_AND_USER}{suffix}", (user, request_id))
        if not row:
            return None, None
        if lock:
            self._held.add(request_id)
        width = len(REQUEST_COLUMNS)
        name, kind, roles, disabled = row[width:]
        return request_from_row(row[:width]), (
            None if name is None else identity_from_row(name, kind, roles, disabled))

    def request_to_run(self, request_id: str
                       ) -> tuple[ApprovalRequest | None, Approvals | None]:
        """``Store.request_to_run``: on PostgreSQL one statement, the row not held; SQLite
        gives no approvals (its claims hold the database first, at no round trip's cost)."""
        if not self.dialect.seals_later:
            return self.get_request(request_id), None
        rows = self._exec(_SELECT_REQUEST_TO_RUN, (request_id,)).fetchall()
        if not rows:
            return None, None
        width = len(REQUEST_COLUMNS)
        return request_from_row(rows[0][:width]), Approvals(
            of=[(name, None if kind is None else identity_from_row(name, kind, roles, disabled))
                for name, kind, roles, disabled in (row[width + 1:] for row in rows)
                if name is not None],
            stamp=str(rows[0][width]))

    def expect_as_known(self, request: ApprovalRequest, user: Identity) -> None:
        """``Tx.expect_as_known``: the request counts as held, and its next compare-and-set,
        kept back, carries ``_AS_KNOWN`` (so a commit that sent nothing before is one
        statement, its check inside)."""
        if self._batch is None:
            raise ValueError("only a PostgreSQL transaction takes a request as known")
        self._held.add(request.id)
        self._known[request.id] = (
            request.args, request.args_hash, request.approved_args, request.approved_hash,
            user.name, user.kind.value, json.dumps(list(user.roles)))

    def find_request(self, thread_id: str, call_id: str) -> ApprovalRequest | None:
        row = self._one(f"{_SELECT_REQUEST} WHERE thread_id = ? AND call_id = ?"
                        f"{self.dialect.lock_suffix}", (thread_id, call_id))
        if not row:
            return None
        request = request_from_row(row)
        self._held.add(request.id)
        return request

    def insert_request(self, request: ApprovalRequest) -> None:
        self._defer(_INSERT_REQUEST, [
            *(get(request) if encode is None else encode(get(request))
              for get, encode in ENCODERS), asked_by(request.reasons)])

    def update_request(self, request: ApprovalRequest, **changes: Any) -> ApprovalRequest | None:
        changes["version"] = request.version + 1
        params = [encode(n, v) for n, v in changes.items()]
        if self._batch is not None and request.id in self._held:
            # Nothing can move a row this transaction holds: the compare-and-set goes with
            # the next round trip, and PostgreSQL itself rolls everything back if it failed.
            from signoff.store.pgbatch import guarded  # noqa: PLC0415 (PostgreSQL only)

            known = self._known.pop(request.id, ())
            update = _update_sql(tuple(changes)) + (" " + _AS_KNOWN if known else "")
            statement, what = guarded(self.dialect.sql(update),
                                      f"request {request.id} changed underneath")
            self._batch.defer(statement, (*params, request.id, request.version, *known, what))
            return replaced(request, changes)
        cursor = self._exec(_update_sql(tuple(changes)), [*params, request.id, request.version])
        if cursor.rowcount != 1:
            return None
        # The version matched, so the row is ``request`` plus ``changes``: no need to read it.
        return replaced(request, changes)

    def hold_request(self, request: ApprovalRequest
                     ) -> list[tuple[str, Identity | None]] | None:
        """Hold ``request``'s row for the rest of the transaction (``FOR UPDATE``; SQLite's
        ``BEGIN IMMEDIATE`` already holds the database). ``None`` unless it is still that
        version with those arguments; else the approvers of its hash to run, as
        ``approvers`` gives them — five columns of the row and the approvals, one query."""
        lock = " FOR UPDATE OF r" if self.dialect.lock_suffix else ""
        rows = self._exec(
            "SELECT r.version, r.args, r.args_hash, r.approved_args, r.approved_hash, "
            "d.approver, u.kind, u.roles, u.disabled FROM requests r "
            "LEFT JOIN decisions d ON d.request_id = r.id AND d.kind IN ('approve', 'edit') "
            "AND d.args_hash = ? LEFT JOIN users u ON u.name = d.approver "
            f"WHERE r.id = ? ORDER BY d.created_at, d.id{lock}",
            (request.run_hash, request.id)).fetchall()
        if not rows or tuple(rows[0][:5]) != (
                request.version, request.args, request.args_hash, request.approved_args,
                request.approved_hash):
            return None
        self._held.add(request.id)
        return [(name, None if kind is None else identity_from_row(name, kind, roles, disabled))
                for *_, name, kind, roles, disabled in rows if name is not None]

    def finish_execution(self, request_id: str, fencing_token: int, *,
                         event: Event | None = None, **changes: Any) -> bool:
        """``executing → changes['status']`` for the holder of ``fencing_token`` only,
        without reading the row first; ``False`` when it is not (or no longer) so. With
        ``event`` (``(kind, at_us, actor, data)``), that move's audit event is written only
        if the move was: on PostgreSQL in the same statement (a run's end is then one round
        trip, its commit included, when it is its transaction's only statement)."""
        assignments = ", ".join(f"{name} = ?" for name in changes)
        params = [encode(n, v) for n, v in changes.items()]
        update = (f"UPDATE requests SET {assignments}, version = version + 1 "
                  "WHERE id = ? AND fencing_token = ? AND status = 'executing'")
        if event is not None and self.dialect.seals_later:
            kind, at_us, actor, data = event
            self.audit.flush()  # the events recorded before this one come first
            self.audit.appended = True
            cursor = self._exec(
                f"WITH moved AS ({update} RETURNING id) INSERT INTO audit_pending "
                "(at_us, kind, request_id, actor, data) SELECT ?, ?, id, ?, ? FROM moved",
                [*params, request_id, fencing_token, at_us, kind, actor, canonical_data(data)])
            return bool(cursor.rowcount == 1)
        cursor = self._exec(update, [*params, request_id, fencing_token])
        if cursor.rowcount != 1:
            return False
        if event is not None:
            kind, at_us, actor, data = event
            self.record_audit(kind, at_us=at_us, request_id=request_id, actor=actor, data=data)
            self.notify(request_id)
        return True

    def claim_request(self, request: ApprovalRequest, *, event: Event, commit: bool = False,
                      approvals: Approvals | None = None, **changes: Any) -> int | None:
        """The claim's audit event ``event`` (``(kind, at_us, actor, data)``) and the
        compare-and-set of ``request`` with ``changes``, its fencing token set to that
        event's number: one statement on PostgreSQL. The token, or ``None`` when the
        request moved (the event is then written but must be rolled back: the caller
        raises). ``commit``: the claim ends its transaction — PostgreSQL commits it in the
        same round trip, and nothing may follow it (the fencing token comes back with the
        commit; a claim that moved nothing aborts there instead, writing nothing).
        ``approvals`` (PostgreSQL, with ``commit``): the row was read, not held, so the
        compare-and-set also requires its arguments, their hashes and its approvals
        (``approvals.stamp``) to be as read."""
        kind, at_us, actor, data = event
        if not self.dialect.seals_later:
            if approvals is not None:
                raise ValueError("a claim on SQLite holds the request first")
            token = self.append_audit(kind, at_us=at_us, request_id=request.id, actor=actor,
                                      data=data)
            moved = self.update_request(request, fencing_token=token, **changes)
            return None if moved is None else token
        if approvals is not None and not (commit and self._batch is not None):
            raise ValueError("a claim without the row held must commit with it")
        self.audit.flush()
        self.audit.appended = True
        changes["version"] = request.version + 1
        assignments = ", ".join(f"{name} = ?" for name in changes)
        event_cte = ("WITH event AS (INSERT INTO audit_pending (at_us, kind, request_id, actor, "
                     "data) VALUES (?, ?, ?, ?, ?) RETURNING seq)")
        update = (f"UPDATE requests SET {assignments}, fencing_token = event.seq FROM event "
                  "WHERE requests.id = ? AND requests.version = ?"
                  + ("" if approvals is None else " " + _AS_READ) + " RETURNING event.seq")
        params: list[Any] = [at_us, kind, request.id, actor, canonical_data(data),
                             *(encode(n, v) for n, v in changes.items()), request.id,
                             request.version]
        if approvals is not None:
            params += [request.args, request.args_hash, request.approved_args,
                       request.approved_hash, approvals.stamp]
        statement = f"{event_cte} {update}"
        if commit and self._batch is not None:
            # Committed with it: a compare-and-set that moved nothing must fail inside
            # PostgreSQL, before the COMMIT, so that the event does not stay.
            statement = (f"{event_cte}, claimed AS ({update}) SELECT (SELECT seq FROM claimed), "
                         "signoff_expect_one((SELECT COUNT(*) FROM claimed), ?)")
            params.append(f"request {request.id} changed underneath")
        row = self._exec(statement, params, commit=commit).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def requests_in(self, statuses: Sequence[RequestStatus], limit: int) -> list[ApprovalRequest]:
        marks = ", ".join("?" for _ in statuses)
        rows = self._exec(f"{_SELECT_REQUEST} WHERE status IN ({marks}) ORDER BY created_at "
                          "LIMIT ?", [s.value for s in statuses] + [limit]).fetchall()
        return [request_from_row(r) for r in rows]

    def approved_ids(self, limit: int) -> list[str]:
        rows = self._exec("SELECT id FROM requests WHERE status = 'approved' ORDER BY created_at "
                          f"LIMIT ?{self.dialect.skip_locked_suffix}", (limit,)).fetchall()
        return [r[0] for r in rows]

    # ---- decisions ---------------------------------------------------------------------------

    def insert_decision(self, decision: DecisionRecord) -> None:
        self._defer(_INSERT_DECISION, (
            decision.id, decision.request_id, decision.kind.value, decision.approver,
            decision.created_at, decision.args_hash, decision.reason,
            json.dumps(list(decision.alternatives)), decision.args, decision.message,
            decision.scope.value, decision.assertion))

    def decisions(self, request_id: str) -> list[DecisionRecord]:
        rows = self._exec(f"SELECT {', '.join(DECISION_COLUMNS)} FROM decisions "
                          "WHERE request_id = ? ORDER BY created_at, id", (request_id,)).fetchall()
        return [decision_from_row(r) for r in rows]

    def approvers(self, request_id: str, args_hash: str) -> list[tuple[str, Identity | None]]:
        """Who approved ``args_hash`` on this request, in order, each with their identity as
        stored now (``None``: no such user any more) — one query."""
        rows = self._exec("SELECT d.approver, u.kind, u.roles, u.disabled FROM decisions d "
                          "LEFT JOIN users u ON u.name = d.approver "
                          "WHERE d.request_id = ? AND d.kind IN ('approve', 'edit') "
                          "AND d.args_hash = ? ORDER BY d.created_at, d.id",
                          (request_id, args_hash)).fetchall()
        return [(name, None if kind is None else identity_from_row(name, kind, roles, disabled))
                for name, kind, roles, disabled in rows]

    # ---- audit (``signoff.store.auditlog``) ---------------------------------------------------

    def append_audit(self, kind: AuditKind, *, at_us: int, request_id: str | None,
                     actor: str | None, data: Mapping[str, Any]) -> int:
        """``AuditLog.append``: the event's number (SQLite: its index in the chain)."""
        return self.audit.append(kind, at_us=at_us, request_id=request_id, actor=actor,
                                 data=data)

    def record_audit(self, kind: AuditKind, *, at_us: int, request_id: str | None,
                     actor: str | None, data: Mapping[str, Any]) -> None:
        """``AuditLog.record``: an event whose number nobody needs."""
        self.audit.record(kind, at_us=at_us, request_id=request_id, actor=actor, data=data)

    def flush_audit(self) -> None:
        self.audit.flush()

    def append_audits(self, events: Sequence[Event]
                      ) -> None:
        """``AuditLog.append_many``: events without a request, in order."""
        self.audit.append_many(events)

    @property
    def appended(self) -> bool:
        """It wrote audit events (PostgreSQL pokes the sealer after commit)."""
        return self.audit.appended

    @property
    def head(self) -> tuple[int, str] | None:
        """The audit head after this transaction's events (``None``: it never looked)."""
        return self.audit.head

    # ---- idempotency, held requests, wake-ups ---------------------------------------------

    def idempotent_response(self, key: str) -> tuple[str, str, str] | None:
        row = self._one("SELECT request_id, body_hash, response FROM idempotency WHERE key = ?",
                        (key,))
        return (row[0], row[1], row[2]) if row else None

    def put_idempotent_response(self, key: str, *, request_id: str, body_hash: str,
                                response: str, at: float) -> None:
        self._defer("INSERT INTO idempotency (key, request_id, body_hash, response, created_at) "
                   "VALUES (?, ?, ?, ?, ?)", (key, request_id, body_hash, response, at))

    def pending_to_hold(self, thread_id: str, but: str) -> list[ApprovalRequest]:
        """The thread's other pending requests, held until commit — skipping any another
        transaction holds (it is deciding them; waiting could deadlock on its lock of ours)."""
        rows = self._exec(f"{_SELECT_REQUEST} WHERE thread_id = ? AND status = 'pending' "
                          f"AND id != ? ORDER BY created_at, id"
                          f"{self.dialect.skip_locked_suffix}", (thread_id, but)).fetchall()
        held = [request_from_row(r) for r in rows]
        self._held.update(r.id for r in held)
        return held

    def notify(self, request_id: str) -> None:
        """Wake this process's waiters on commit (SQLite; PostgreSQL's triggers send a
        NOTIFY for every audited request event, which wakes every process's)."""
        self.notified.append(request_id)
