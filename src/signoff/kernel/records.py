"""What the layers above read through the gate, and the few records they keep with it.

The server, the CLI and the adapters list requests, read a thread's state, page the
audit log and count users: plain reads, answered here so that no caller needs the store
the gate was built on. The records they keep — a call's result in the audit (the MCP
proxy), what a LangGraph pause showed (``shown``), a Slack callback's first delivery, a
refused click from someone signoff does not know — are written here, each in one
transaction with its audit event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from signoff.audit import AuditEvent, AuditKind, Verification, to_us
from signoff.errors import InvalidInput
from signoff.identity import Identity, Session
from signoff.insights import TOP_MAX, Insights
from signoff.kernel.auditing import Trust, verify_audit
from signoff.kernel.verdicts import VerdictLog
from signoff.model import ApprovalRequest, Decision, DecisionRecord, RequestStatus
from signoff.store.base import Store
from signoff.store.capabilities import Capability, SealsAfterCommit, supports
from signoff.store.deliveries import Delivery
from signoff.store.pages import RequestQuery

if TYPE_CHECKING:
    from signoff.store.thread_memory import ThreadMemory


class Records:
    """Reads for the layers above, and the records they keep through the gate."""

    def __init__(self, store: Store, *, verdicts: VerdictLog | None,
                 clock: Callable[[], float]) -> None:
        self.store = store
        self.verdicts = verdicts  # a call's result is batched like a verdict (``None``: now)
        self.clock = clock

    # ---- requests and threads -------------------------------------------------------------------

    def find_request(self, request_id: str) -> ApprovalRequest | None:
        return self.store.get_request(request_id)

    def list_requests(self, *, status: RequestStatus | None = None,
                      thread_id: str | None = None, limit: int = 100,
                      query: RequestQuery | None = None,
                      after: tuple[float, str] | None = None) -> list[ApprovalRequest]:
        return self.store.list_requests(status=status, thread_id=thread_id, limit=limit,
                                        query=query, after=after)

    def decisions(self, request_id: str) -> list[DecisionRecord]:
        return self.store.decisions(request_id)

    def thread_memory(self, thread_id: str, *, fresh: bool = False) -> ThreadMemory:
        return self.store.thread_memory(thread_id, fresh=fresh)

    def pending_on_thread(self, thread_id: str) -> list[ApprovalRequest]:
        return self.store.pending_on_thread(thread_id)

    def thread_requests(self, thread_id: str, *, limit: int = 500) -> list[ApprovalRequest]:
        """The thread's requests, newest first (what a paused run is shown)."""
        return self.store.list_requests(thread_id=thread_id, limit=limit)

    def thread_parties(self, thread_id: str) -> frozenset[str]:
        return self.store.thread_parties(thread_id)

    # ---- the audit log, users, deliveries ------------------------------------------------------

    def audit_events(self, *, after: int = 0, limit: int | None = None,
                     seal: bool = True) -> Iterator[AuditEvent]:
        return self.store.audit_events(after=after, limit=limit, seal=seal)

    def audit_head(self) -> tuple[int, str]:
        return self.store.audit_head()

    def change_token(self) -> object:
        """A token for ``wait``: what the store has seen change so far."""
        return self.store.change_token()

    def wait(self, key: str, *, timeout: float, since: object = None) -> None:
        """Until ``key`` (a request id, or ``"*"``: anything) changes after ``since``, or
        ``timeout`` seconds (what the server's live feed sleeps on)."""
        self.store.wait(key, timeout=timeout, since=since)

    def count_requests(self) -> dict[str, int]:
        """Requests by status, as every server shares them (``/metrics``)."""
        return self.store.count_requests()

    def delivery_counts(self) -> dict[tuple[str, str], int]:
        """Deliveries in the log by (channel, status) (``/metrics``)."""
        return self.store.delivery_counts()

    def verify_audit(self, trust: Trust | None = None) -> Verification:
        """The chain and the checks beside it (``signoff.kernel.auditing``)."""
        return verify_audit(self.store, trust=trust, clock=self.clock)

    def unsealed(self) -> int:
        """Committed audit events not sealed into the chain yet (PostgreSQL seals after
        commit; a running transaction holds later ones back): a read of the audit does
        not show them. Always 0 on a store that chains in its commits."""
        if not supports(self.store, Capability.SEALS_AFTER_COMMIT):
            return 0
        return int(cast("SealsAfterCommit", self.store).unsealed()[0])

    def count_users(self) -> int:
        return self.store.count_users()

    def insights(self, *, since: float | None, until: float | None, top: int,
                 rules: Sequence[str]) -> Insights:
        """The figures of the requests created in ``[since, until)``, aggregated by the
        store; ``rules``: the policy's rule ids (those nothing named are never matched)."""
        if since is not None and until is not None and since >= until:
            raise InvalidInput("the window is empty: since must be before until",
                               code="invalid_window", field="since")
        if not 1 <= top <= TOP_MAX:
            raise InvalidInput(f"top must be between 1 and {TOP_MAX}", code="invalid_limit",
                               field="top")
        return self.store.insights(since=since, until=until, rules=rules, top=top)

    def live_sessions(self) -> dict[str, list[Session]]:
        """Every user's sessions that have not ended, by user name."""
        now = self.clock()
        live: dict[str, list[Session]] = {}
        for session in self.store.sessions_of():
            if session.ends_at() > now:
                live.setdefault(session.user, []).append(session)
        return live

    def identity_of(self, name: str) -> Identity | None:
        """``name`` as stored now (``None``: no such identity)."""
        with self.store.transaction() as tx:
            return tx.get_user(name)

    def deliveries(self, *, channel: str | None = None, status: str | None = None,
                   request_id: str | None = None, before_index: int | None = None,
                   limit: int = 100) -> list[Delivery]:
        return self.store.deliveries(channel=channel, status=status, request_id=request_id,
                                     before_index=before_index, limit=limit)

    # ---- records kept for the layers above ------------------------------------------------------

    def note_call_result(self, data: Mapping[str, Any], *, actor: str | None) -> None:
        """``call.result``: what a call the gate let through returned (the MCP proxy),
        batched with the verdicts unless they are written at once."""
        at_us = int(self.clock() * 1_000_000)
        if self.verdicts is not None:
            self.verdicts.add(AuditKind.CALL_RESULT, at_us=at_us, actor=actor, data=data)
            return
        with self.store.transaction() as tx:
            tx.append_audit(AuditKind.CALL_RESULT, at_us=at_us, request_id=None, actor=actor,
                            data=data)

    def note_policy_changed(self, data: Mapping[str, Any], *, actor: str | None) -> None:
        """``policy.changed``: the gate judges by a new policy from now on; written at
        once (never batched), before the new policy is used."""
        with self.store.transaction() as tx:
            tx.append_audit(AuditKind.POLICY_CHANGED, at_us=to_us(self.clock()),
                            request_id=None, actor=actor, data=data)

    def note_shown(self, key: str, *, request_id: str, args_hash: str) -> None:
        """Keep, under ``key``, the arguments hash a pause showed, the first time only."""
        with self.store.transaction() as tx:
            if tx.idempotent_response(key) is None:
                tx.put_idempotent_response(key, request_id=request_id, body_hash="shown",
                                           response=json.dumps({"args_hash": args_hash}),
                                           at=self.clock())

    def shown(self, key: str, request_id: str) -> tuple[str | None, ApprovalRequest | None]:
        """The hash kept under ``key`` by ``note_shown`` (``None``: none) and the request,
        read together."""
        with self.store.transaction() as tx:
            stored = tx.idempotent_response(key)
            request = tx.get_request(request_id)
        return (None if stored is None else str(json.loads(stored[2])["args_hash"])), request

    def first_use_of_signature(self, signature: str, *, at: float, keep: float) -> bool:
        """Whether this signed callback is heard here for the first time (kept ``keep``
        seconds): a replayed one is refused."""
        with self.store.transaction() as tx:
            return tx.first_use_of_signature(signature, at=at, keep=keep)

    def note_refused(self, request_id: str, decision: Decision, *, code: str, via: str,
                     actor: str | None, data: Mapping[str, Any]) -> None:
        """``decision.refused`` for a decision refused before it reached ``decide`` (an
        authentic Slack click by someone signoff does not know), under the request if it
        exists."""
        now = self.clock()
        with self.store.transaction() as tx:
            known = tx.get_request(request_id) is not None if request_id else False
            tx.append_audit(AuditKind.DECISION_REFUSED, at_us=to_us(now),
                            request_id=request_id if known else None, actor=actor, data={
                                "kind": decision.kind.value, "code": code, "via": via,
                                **data})
