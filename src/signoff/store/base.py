"""The storage contract's core: a ``Store`` hands out transactions; a ``Tx`` reads and writes
rows. Every backend implements both; what only some do is a named capability
(``signoff.store.capabilities``), listed in ``Store.capabilities``.

Stores only store. The rules (who may decide, quorum, re-validation) live in
the gate, which runs them inside one store transaction, so a check and the
write it allows commit together — with their audit event — or not at all.
A transaction that locks a request (``get_request(..., lock=True)``) holds
that row until commit: SQLite by ``BEGIN IMMEDIATE``, PostgreSQL by
``SELECT … FOR UPDATE``.

The values the contract speaks in are ``signoff.model``'s and ``signoff.store.records``'s;
it imports no backend. Every backend passes the conformance suite,
``tests/store/conformance`` (docs/internals/store.md: running it for a new backend).

The package, module by module: ``base`` and ``capabilities`` (the contract), ``records``
(its values); ``sqlite`` and ``postgres`` (the backends) over ``sqlstore`` (their shared
reads) and ``sqltx`` (their shared transaction: ``dialect``, the ``auditlog`` it holds,
``accounts``, ``threadrows`` and ``deliveries`` rows, ``rows`` codecs); ``schema``
(migrations);
``groupcommit`` and ``fifo`` (SQLite's writers), ``pgbatch``, ``sealer`` and ``outage``
(PostgreSQL's round trips, chain and outages); ``thread_memory`` (thread memory read in
one statement and kept between reads), ``pages`` (keyset pages), ``faults`` (typed
errors), ``insights`` (the history aggregated in SQL), ``retention`` and ``backup``
(``signoff db purge`` and ``backup``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from signoff.audit import AuditEvent, AuditKind, Verification
from signoff.identity import Account, Identity, Session
from signoff.insights import Insights
from signoff.model import (
    ApprovalRequest,
    DecisionRecord,
    Grant,
    RecalledCall,
    Rejection,
    RequestStatus,
)
from signoff.store.capabilities import Capability, GuardsUnread, GuardsUnreadTx
from signoff.store.pages import RequestQuery
from signoff.store.records import (
    Approvals,
    Delivery,
    Event,
    Passkey,
    StoredEndpoint,
    ThreadMemory,
)

if TYPE_CHECKING:
    from signoff.checkpoints import Checkpoint
    from signoff.keys import SigningKey

__all__ = ["Approvals", "Event", "Store", "Tx"]


class Tx(GuardsUnreadTx, Protocol):
    """One open transaction. Every write a gate makes goes through one of these. (The
    ``GuardsUnread`` capability's two methods are inherited: the kernel calls them once
    ``Store.guards_unread`` says so; other stores refuse them.)"""

    def get_request(self, request_id: str, *, lock: bool = False) -> ApprovalRequest | None: ...

    def get_request_and_user(self, request_id: str, user: str
                             ) -> tuple[ApprovalRequest | None, Identity | None]:
        """The request, held until commit, and ``user`` as stored now: one statement
        (``(None, None)`` without the request)."""
        ...

    def find_request(self, thread_id: str, call_id: str) -> ApprovalRequest | None: ...

    def insert_request(self, request: ApprovalRequest) -> None: ...

    def update_request(self, request: ApprovalRequest, **changes: Any) -> ApprovalRequest | None:
        """Compare-and-set on ``request.version``: the new row, or ``None`` if it moved."""
        ...

    def hold_request(self, request: ApprovalRequest
                     ) -> list[tuple[str, Identity | None]] | None:
        """Hold the row until commit. ``None`` unless it is still ``request``'s version with
        ``request``'s arguments (and their hashes); else the approvers of the hash to run,
        as ``approvers`` gives them."""
        ...

    def finish_execution(self, request_id: str, fencing_token: int, *,
                         event: Event | None = None, **changes: Any) -> bool:
        """Compare-and-set ``executing`` → ``changes['status']`` on the fencing token, with
        that move's audit event ``event`` if given (written only if the move was)."""
        ...

    def claim_request(self, request: ApprovalRequest, *, event: Event, commit: bool = False,
                      approvals: Approvals | None = None, **changes: Any) -> int | None:
        """Append the claim's event and compare-and-set ``request`` with ``changes``, its
        fencing token the event's number; the token, or ``None`` if the request moved.
        ``commit``: nothing follows in this transaction (PostgreSQL commits with it).
        ``approvals`` (``GUARDS_UNREAD`` stores only, with ``commit``; the row not held):
        the claim also requires the row's arguments and hashes, and its approvals, to be
        as read."""
        ...

    def insert_decision(self, decision: DecisionRecord) -> None: ...

    def decisions(self, request_id: str) -> list[DecisionRecord]: ...

    def approvers(self, request_id: str, args_hash: str) -> list[tuple[str, Identity | None]]:
        """The approvers of ``args_hash`` (approve and edit decisions), in order, each with
        their identity as stored now, ``None`` if they no longer exist."""
        ...

    def append_audit(self, kind: AuditKind, *, at_us: int, request_id: str | None,
                     actor: str | None, data: Mapping[str, Any]) -> int:
        """Append one event; its number (unique; increasing among transactions one row
        lock orders: a claim's fencing token). Its index in the chain is given when it is
        sealed — at once on SQLite, just after commit on PostgreSQL."""
        ...

    def record_audit(self, kind: AuditKind, *, at_us: int, request_id: str | None,
                     actor: str | None, data: Mapping[str, Any]) -> None:
        """``append_audit`` for an event whose number nobody needs: the store may write it
        with the transaction's next events (one statement), in order."""
        ...

    def append_audits(self, events: Sequence[Event]
                      ) -> None:
        """Many events without a request, ``(kind, at_us, actor, data)`` each, in order."""
        ...

    def created_after(self, index: int, limit: int
                      ) -> tuple[int, list[tuple[int, ApprovalRequest | None]]]:
        """The audit head this transaction sees, and up to ``limit`` ``request.created``
        events after ``index`` up to it, each with its request (``None``: gone)."""
        ...

    def approved_ids(self, limit: int) -> list[str]:
        """Approved requests no other transaction holds (``SKIP LOCKED`` where there is one)."""
        ...

    def requests_in(self, statuses: Sequence[RequestStatus], limit: int) -> list[ApprovalRequest]:
        ...

    def put_rejection(self, rejection: Rejection, *, at: float) -> None: ...

    def put_review(self, thread_id: str, call_id: str, *, args_hash: str,
                   record: Mapping[str, Any], at: float) -> None: ...

    def insert_grant(self, grant: Grant, *, at: float, request_id: str | None) -> None: ...

    def use_grant(self, grant_id: str) -> bool:
        """Count one use; ``False`` when the grant is used up (or gone)."""
        ...

    def insert_user(self, identity: Identity, *, token_hash: str, at: float,
                    expires_at: float | None = None) -> None: ...

    def get_user(self, name: str) -> Identity | None: ...

    def user_by_token(self, token_hash: str) -> Identity | None: ...

    def set_user(self, name: str, *, roles: tuple[str, ...] | None = None,
                 disabled: bool | None = None) -> bool: ...

    # Accounts, login links, sessions (``signoff.store.accounts.AccountRows``).

    def account(self, name: str, *, lock: bool = False) -> Account | None: ...

    def active_admins(self, *, at: float | None = None) -> list[str]: ...

    def set_token(self, name: str, *, token_hash: str, at: float,
                  expires_at: float | None) -> bool: ...

    def mark_removed(self, name: str, *, at: float, tombstone_hash: str) -> bool: ...

    def insert_login_link(self, code_hash: str, *, user: str, at: float, expires_at: float,
                          created_by: str | None) -> None: ...

    def end_login_links(self, user: str, *, at: float) -> int: ...

    def use_login_link(self, code_hash: str, *, at: float) -> tuple[str, str | None]: ...

    def insert_session(self, session: Session, *, secret_hash: str) -> None: ...

    def touch_session(self, session_id: str, *, at: float) -> None: ...

    def delete_sessions(self, *, user: str | None = None, session_id: str | None = None,
                        secret_hash: str | None = None) -> list[Session]: ...

    def idempotent_response(self, key: str) -> tuple[str, str, str] | None:
        """``(request_id, body_hash, response_json)`` stored under ``key``."""
        ...

    def put_idempotent_response(self, key: str, *, request_id: str, body_hash: str,
                                response: str, at: float) -> None: ...

    def thread_mode(self, thread_id: str) -> str | None: ...

    def set_thread_mode(self, thread_id: str, mode: str, *, at: float,
                        by: str | None = None, waiting_run: str | None = None) -> None:
        """Store the thread's mode and who set it (``None``: trusted code), with the run
        waiting on the thread (``waiting_run``, else the run of its oldest pending
        request), which takes the mode when it resumes."""
        ...

    def thread_executing(self, thread_id: str) -> bool: ...

    def pending_to_hold(self, thread_id: str, but: str) -> list[ApprovalRequest]: ...

    def thread_parties(self, thread_id: str) -> frozenset[str]:
        """Every principal and agent that ever asked for a call on the thread."""
        ...

    def notify(self, request_id: str) -> None:
        """Wake waiters on this request once the transaction commits."""
        ...

    # Notifications (``signoff.store.deliveries.DeliveryRows``).

    def channel_cursor(self, channel: str) -> int: ...

    def set_channel_cursor(self, channel: str, index: int) -> None: ...

    def start_channel_cursor(self, channel: str) -> None: ...

    def drop_channel_cursor(self, channel: str) -> None: ...

    def audit_after(self, index: int, limit: int) -> list[AuditEvent]: ...

    def insert_delivery(self, delivery: Delivery) -> None: ...

    def due_deliveries(self, channels: Sequence[str], *, now: float,
                       limit: int) -> list[Delivery]: ...

    def lease_delivery(self, delivery: Delivery, *, owner: str, until: float) -> bool: ...

    def lease_owners(self) -> list[str]: ...

    def release_leases(self, owner: str) -> int: ...

    def settle_delivery(self, delivery_id: str, *, owner: str, attempts: int, status: str,
                        next_at: float, at: float, last_status: int | None,
                        last_error: str | None) -> bool: ...

    def replay_deliveries(self, *, now: float, ids: Sequence[str] = (),
                          channel: str | None = None, status: str | None = None,
                          after_index: int | None = None) -> list[str]: ...

    def insert_endpoint(self, endpoint: StoredEndpoint) -> bool: ...

    def delete_endpoint(self, name: str) -> bool: ...

    def put_slack_message(self, request_id: str, *, channel: str, ts: str, at: float) -> None:
        ...

    def add_timer(self, request_id: str, kind: str, *, due_at: float, rule: int) -> None: ...

    def due_timers(self, *, now: float, limit: int) -> list[tuple[str, str, float, int]]: ...

    def finish_timer(self, request_id: str, kind: str, *, at: float) -> None: ...

    def first_use_of_signature(self, signature: str, *, at: float, keep: float) -> bool: ...

    def publish_key(self, jwk: dict[str, Any], *, at: float) -> bool:
        """Publish a public signing key (``signoff.keys``); ``False``: it already was."""
        ...

    def retire_key(self, kid: str, *, at: float) -> bool: ...

    def add_passkey(self, passkey: Passkey) -> bool:
        """Store a registered passkey (``signoff.store.passkeys``); ``False``: its id is."""
        ...

    def passkey(self, credential_id: str) -> Passkey | None: ...

    def passkeys_of(self, user: str) -> list[Passkey]: ...

    def remove_passkey(self, user: str, credential_id: str, *, at: float) -> bool:
        """Mark it removed (kept for the history it signed); ``False``: no such live one."""
        ...

    def use_passkey(self, credential_id: str, *, sign_count: int, at: float) -> bool:
        """A verified use: the sign count moves up (compare-and-set); ``False``: it did not."""
        ...

    def add_audit_signature(self, checkpoint: Checkpoint) -> None:
        """Store a signed audit checkpoint (``signoff.checkpoints``; append-only)."""
        ...

    def sign_audit_head(self, key: SigningKey, *, at_us: int) -> Checkpoint | None:
        """Sign the audit head as this transaction sees it; ``None``: the log is empty."""
        ...

    def put_receipt(self, request_id: str, token: str, *, kid: str, at: float) -> None:
        """Keep the signed receipt of a request's approval (``signoff.receipts``)."""
        ...

    def receipt_of(self, request_id: str) -> str | None: ...


class Store(GuardsUnread, Protocol):
    """A database signoff keeps its state in. Implements ``DecisionMemory`` too. (The
    ``GuardsUnread`` capability's members are inherited, as ``Tx``'s are: on a store
    without it ``guards_unread`` is ``False``.)"""

    backend: str
    # What this store does beyond the core (``signoff.store.capabilities``).
    capabilities: frozenset[Capability]

    def migrate(self) -> int:
        """Apply pending migrations; return the schema version."""
        ...

    def transaction(self) -> AbstractContextManager[Tx]: ...

    def finish_execution(self, request_id: str, fencing_token: int, *, event: Event,
                         **changes: Any) -> bool:
        """``Tx.finish_execution`` with its event, as a transaction of its own: a run's
        common end, one round trip on PostgreSQL."""
        ...

    def get_request(self, request_id: str) -> ApprovalRequest | None: ...

    def request_and_user(self, request_id: str, user: str
                         ) -> tuple[ApprovalRequest | None, Identity | None]:
        """The request and ``user`` as stored now, in one statement, the row not held (a
        decision that writes as on a known row, its guard checking both are still so)."""
        ...

    def request_to_run(self, request_id: str
                       ) -> tuple[ApprovalRequest | None, Approvals | None]:
        """The request, and where a claim can use them (``GUARDS_UNREAD``: one round trip
        less than holding the row first), its approvals as read in the same statement;
        else ``None`` for them."""
        ...

    def list_requests(self, *, status: RequestStatus | None = None,
                      thread_id: str | None = None, limit: int = 100,
                      query: RequestQuery | None = None,
                      after: tuple[float, str] | None = None) -> list[ApprovalRequest]:
        """Newest first; ``query`` narrows; ``after``: the last key of the page before."""
        ...

    def decisions(self, request_id: str) -> list[DecisionRecord]: ...

    def audit_events(self, *, after: int = 0, limit: int | None = None,
                     seal: bool = True) -> Iterator[AuditEvent]:
        ...

    def seal(self, *, wait: float = 1.0) -> bool:
        """Chain what was committed before the call; ``False``: some still held. Nothing to
        do (``True``) unless the store ``SEALS_AFTER_COMMIT``."""
        ...

    def rejection_for(self, thread_id: str, tool: str, args_hash: str) -> Rejection | None: ...

    def recall_call(self, thread_id: str, call_id: str) -> RecalledCall | None: ...

    def grants_for(self, *, thread_id: str | None, session_id: str | None,
                   tool: str) -> Sequence[Grant]: ...

    def audit_head(self) -> tuple[int, str]: ...

    def created_after(self, index: int, limit: int
                      ) -> tuple[int, list[tuple[int, ApprovalRequest | None]]]:
        """``Tx.created_after`` in a read of its own (the timer pass reads before it
        writes)."""
        ...

    def audit_anchor(self) -> tuple[int, str]:
        """The newest retention checkpoint (index, hash); ``(0, GENESIS)``: none."""
        ...

    def verify_audit(self, *, tap: Callable[[AuditEvent], None] | None = None
                     ) -> Verification:
        """Verify the sealed chain from the retention anchor against the recorded head;
        ``tap`` is shown every event the walk found good, in order (the kernel's checks
        beside the chain's: ``signoff.kernel.auditing``)."""
        ...

    def sign_audit(self, key: SigningKey) -> None:
        """Sign the audit head with ``key`` from now on, regularly and off the commit path
        (PostgreSQL: at the sealer's passes; SQLite: a thread of this store), and at close
        (``signoff.checkpoints``; the gate hands its key down here)."""
        ...

    def audit_signatures(self, *, after: int = 0) -> list[Checkpoint]:
        """The signed checkpoints above index ``after``, by index then key."""
        ...

    def count_audit_signatures(self, *, upto: int) -> int:
        """How many signed checkpoints are at or below ``upto``."""
        ...

    def user_by_token(self, token_hash: str) -> Identity | None: ...

    def thread_mode(self, thread_id: str) -> str | None:
        """The review mode stored for the thread, read now."""
        ...

    def thread_parties(self, thread_id: str) -> frozenset[str]:
        """Every principal and agent that ever asked for a call on the thread, read now."""
        ...

    def thread_memory(self, thread_id: str, *, fresh: bool = False) -> ThreadMemory:
        """Mode, rejected tools, grants and pending requests of the thread, as recently as
        ``memory_token`` allows (``fresh``: read now)."""
        ...

    def remembered_thread_memory(self, thread_id: str) -> ThreadMemory | None:
        """``thread_memory`` if it is remembered and still fresh, else ``None``; never
        reads the database (for callers that must not wait on it)."""
        ...

    def pending_on_thread(self, thread_id: str) -> list[ApprovalRequest]: ...

    def count_requests(self) -> dict[str, int]:
        """Requests per status."""
        ...

    def insights(self, *, since: float | None = None, until: float | None = None,
                 rules: Sequence[str] = (), top: int = 20) -> Insights:
        """The history's figures, aggregated in the database (``signoff.store.insights``)."""
        ...

    def count_users(self) -> int: ...

    def account_by_token(self, token_hash: str) -> Account | None: ...

    def accounts(self, *, removed: bool = False) -> list[Account]: ...

    def session_by_secret(self, secret_hash: str) -> tuple[Session, Account] | None: ...

    def sessions_of(self, user: str | None = None) -> list[Session]: ...

    def deliveries(self, *, channel: str | None = None, status: str | None = None,
                   request_id: str | None = None, before_index: int | None = None,
                   limit: int = 100) -> list[Delivery]: ...

    def delivery(self, delivery_id: str) -> Delivery | None: ...

    def delivery_counts(self) -> dict[tuple[str, str], int]: ...

    def next_delivery_due(self) -> float | None: ...

    def slack_message(self, request_id: str) -> tuple[str, str] | None: ...

    def next_timer_due(self) -> float | None: ...

    def timers(self, request_id: str) -> list[tuple[str, float, float | None]]: ...

    def webhook_endpoints(self) -> list[StoredEndpoint]: ...

    def published_keys(self) -> list[dict[str, Any]]:
        """Every public signing key published here (a JWK each, with ``created_at`` and
        ``retired_at``): what the JWKS serves."""
        ...

    def passkeys_of(self, user: str) -> list[Passkey]: ...

    def passkey(self, credential_id: str) -> Passkey | None: ...

    def passkey_requests(self) -> list[ApprovalRequest]:
        """Approved requests (whatever came of them) whose approvals need a passkey."""
        ...

    def receipt(self, request_id: str) -> str | None:
        """The receipt of a request's approval, or ``None`` (none was signed)."""
        ...

    def change_token(self) -> object:
        """An opaque marker of "now": take it *before* reading what you will wait on."""
        ...

    def accounts_token(self) -> object | None:
        """An opaque marker that changes when any process may have changed an account: take
        it *before* reading one; ``None``: this store cannot tell (always, unless it
        ``HEARS_OTHER_PROCESSES``)."""
        ...

    def wait(self, request_id: str, *, timeout: float, since: object = None) -> None:
        """Block until something may have changed since ``since`` (a ``change_token()``),
        or ``timeout`` seconds pass. Spurious wake-ups are allowed; missed ones are not."""
        ...

    def on_close(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` first thing in ``close()``: whoever writes in the background (the
        verdict log) finishes before the connections go."""
        ...

    def close(self) -> None: ...
