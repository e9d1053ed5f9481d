"""The tamper-evident audit log: an append-only hash chain.

Each event's hash covers the previous event's hash and the event's own
canonical (RFC 8785) content, so changing, removing or reordering any event
breaks every hash after it. ``verify`` walks the chain and names the first
index that does not check out. Stores refuse UPDATE and DELETE on the table
(SQLite triggers, PostgreSQL trigger and privileges) but for a purged prefix: a
retention purge records a checkpoint first and the chain is verified from it
(``signoff.store.retention``). The chain catches what gets past them (a dropped
trigger, a hand-edited file).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from signoff import jcs

GENESIS = "sha256:" + "0" * 64


class AuditKind(enum.StrEnum):
    """Every kind of audit event signoff writes, each with when it is written and what its
    data holds (docs/kernel.md#audit-event-kinds lists them from here). A member is its
    string, so the stored log, the chain's hashes and every reader comparing strings stay
    as they were; events read back from a store keep a plain ``str`` kind (a log may hold
    kinds an older version wrote)."""

    doc: str

    def __new__(cls, value: str, doc: str) -> AuditKind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.doc = doc
        return member

    # A request's life (``signoff.kernel``). ``request.<status>``: a move to that status
    # (``lifecycle.transition``); its data is ``from``, ``to`` and whichever of
    # ``outcome_code``, ``outcome_reason`` and ``executor`` the move set.
    REQUEST_CREATED = "request.created", (
        "an `ask` verdict made a pending request: its tool, call id, arguments hash, risk, "
        "policy version, decision id, thread and run, the asking agent (`claude-code`, "
        "`gemini-cli` for those hooks), roles, approvals required, expiry and review")
    REQUEST_APPROVED = "request.approved", "the decision that completed the quorum"
    REQUEST_REJECTED = "request.rejected", "an approver's reject"
    REQUEST_RESPONDED = "request.responded", "an approver's answer instead of a run"
    REQUEST_EXPIRED = "request.expired", (
        "met after its expiry: by a decision, a wait, `recover()` or the notifier's timer")
    REQUEST_CANCELLED = "request.cancelled", (
        "cancelled by its asker or an admin, or by `recover()` (its waiting worker died)")
    REQUEST_INVALIDATED = "request.invalidated", "re-validation before running failed"
    REQUEST_EXECUTING = "request.executing", (
        "an executor's claim; the event's number is the claim's fencing token")
    REQUEST_SUCCEEDED = "request.succeeded", "the run's result, or a reconciliation"
    REQUEST_FAILED = "request.failed", "the run's error, or a reconciliation"
    REQUEST_UNKNOWN = "request.unknown", (
        "`recover()` found the claim's lease run out: it is never run again silently")

    # Verdicts that create no request (``signoff.kernel.proposing``; batched unless
    # ``verdict_audit="sync"``): the call's tool, call id, arguments hash, code, source,
    # risk, policy version, decision id, thread, run, rules and any auto review.
    CALL_ALLOWED = "call.allowed", "a call was allowed at once (a rule, a grant, the thread's mode)"
    CALL_DENIED = "call.denied", "a call was denied by a rule"
    CALL_BLOCKED = "call.blocked", (
        "a call was blocked: an ask in a run where nobody may be asked")
    CALL_RESULT = "call.result", (
        "what a call the gate let through returned (the MCP proxy): its outcome and "
        "result hash")

    # Decisions (``signoff.kernel.deciding``, ``once``, ``records``).
    DECISION_RECORDED = "decision.recorded", (
        "an approver's decision was counted: its kind, decision id, arguments hash, reason, "
        "scope, alternatives and `via`")
    DECISION_REFUSED = "decision.refused", (
        "a decision refused before it counted (`decide_once`, a Slack user signoff does "
        "not know): its kind, code and `via`")
    GRANT_CREATED = "grant.created", (
        "an approve for the thread left a standing grant: its id, tool, argument patterns, "
        "arguments hash (`null`: patterns) and scope")
    THREAD_MODE = "thread.mode", (
        "a thread's review mode was set (by an admin, or an approver's auto-approve for the "
        "thread): `thread_id`, `review_mode`, and `decision_id`, `via` for the latter")

    # Accounts and sign-in (``signoff.kernel.accounts``, ``sessions``).
    USER_ADDED = "user.added", "a user was added: name, kind, roles, token expiry"
    USER_ROLES = "user.roles", "a user's roles were set: name, roles and the roles before"
    USER_DISABLED = "user.disabled", "a user was disabled: name and the sessions ended"
    USER_ENABLED = "user.enabled", "a disabled user was enabled again: name"
    USER_REMOVED = "user.removed", "a user was removed for good: name and the sessions ended"
    USER_TOKEN_ROTATED = "user.token_rotated", (
        "a user's token was replaced: name, new token's expiry and the sessions ended")
    USER_LOGIN_LINK = "user.login_link", (
        "a one-use login link was made for a user: name and its expiry")
    SESSION_STARTED = "session.started", (
        "a browser session began: name, session id, `via` (token or link) and its expiry")
    SESSION_ENDED = "session.ended", (
        "a session ended: name, session id and `reason` (logout or revoked)")

    # Passkeys (``signoff.kernel.passkeys``).
    PASSKEY_REGISTERED = "passkey.registered", (
        "an approver registered a passkey: user, credential id, name, relying party id and "
        "origin")
    PASSKEY_REMOVED = "passkey.removed", (
        "a passkey was removed (by its user or an admin): user, credential id and name")

    # Webhooks and the notifier (``signoff.kernel.webhooks``, ``signoff.notify.timers``).
    WEBHOOK_ADDED = "webhook.added", "a webhook endpoint was registered: its settings"
    WEBHOOK_REMOVED = "webhook.removed", "a webhook endpoint was removed: its name"
    WEBHOOK_REPLAYED = "webhook.replayed", (
        "deliveries were made pending again: how many, the first, the channel and status "
        "chosen")
    NOTIFY_REMINDER = "notify.reminder", (
        "a pending request's reminder timer fired: the rule and the seconds waited")
    NOTIFY_ESCALATED = "notify.escalated", (
        "a pending request was escalated: the rule, the seconds waited and the channels")

    # Retention (``signoff.store.retention``).
    DB_PURGED = "db.purged", (
        "`signoff db purge` removed old requests or events: the cut-off, how many of each, "
        "and the checkpoint the chain is verified from")

    # The policy a running gate judges by (``Gate.reload_policy``).
    POLICY_CHANGED = "policy.changed", (
        "a running gate judges by a new policy from now on (an admin applied rule suggestions): "
        "its source, the versions `from` and `to`, the rule ids and suggestion ids written, "
        "and `via`")

    # Signing keys (``signoff.kernel.signing``).
    KEY_ROTATED = "key.rotated", (
        "`signoff keys rotate` retired a signing key and published its successor: both "
        "`kid`s (the retired one stays in the JWKS)")



@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEvent:
    index: int  # 1, 2, 3, … without gaps
    at_us: int  # server clock, microseconds since the epoch
    kind: str  # an AuditKind's value (a plain str: as stored)
    request_id: str | None
    actor: str | None
    data: str  # canonical JSON text
    prev_hash: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "at_us": self.at_us, "kind": self.kind,
                "request_id": self.request_id, "actor": self.actor,
                "data": json.loads(self.data), "prev_hash": self.prev_hash,
                "hash": self.hash}


def to_us(seconds: float) -> int:
    """Audit timestamps are integer microseconds: exact in every store and in JSON."""
    return round(seconds * 1_000_000)


def canonical_data(data: Mapping[str, Any]) -> str:
    """RFC 8785 text of an event's data (``signoff.jcs``: fast for plain values)."""
    return jcs.text(data)


_ASCII_COMPACT = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
_ascii_string = json.encoder.encode_basestring_ascii


def chain_hash(prev_hash: str, *, index: int, at_us: int, kind: str, request_id: str | None,
               actor: str | None, data: str) -> str:
    # A JSON array of integers, strings and nulls: one unambiguous byte string per event
    # (``data`` is already canonical text), cheap enough for every state change.
    if type(index) is int and type(at_us) is int and type(kind) in _KIND_TYPES \
            and type(data) is str and type(request_id) in _STR_OR_NONE \
            and type(actor) in _STR_OR_NONE:
        # The same bytes as the general form below, without building a list to encode.
        text = (f"[{index},{at_us},{_ascii_string(kind)},"
                f"{'null' if request_id is None else _ascii_string(request_id)},"
                f"{'null' if actor is None else _ascii_string(actor)},{_ascii_string(data)}]")
    else:
        text = _ASCII_COMPACT([index, at_us, kind, request_id, actor, data])
    body = text.encode("ascii")
    return "sha256:" + hashlib.sha256(prev_hash.encode("ascii") + b"\n" + body).hexdigest()


_STR_OR_NONE = (str, type(None))
_KIND_TYPES = (str, AuditKind)  # a writer's member or a stored string: the same bytes


@dataclass(frozen=True, slots=True)
class Verification:
    ok: bool
    count: int
    first_bad: int | None = None
    reason: str | None = None
    # Committed events not sealed into the chain yet (PostgreSQL seals after commit; a
    # running transaction holds back the events of every later one): checked once sealed.
    unsealed: int = 0
    unsealed_since_us: int | None = None
    # The checkpoint the chain was checked from: the last event a purge removed (0: none).
    anchor: int = 0
    # What the checks beside the chain's found (``signoff.kernel.auditing``: signed
    # checkpoints, …), and what each of them looked at, by its name.
    findings: tuple[Finding, ...] = ()
    checks: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "count": self.count, "first_bad": self.first_bad,
                "reason": self.reason, "unsealed": self.unsealed,
                "unsealed_since_us": self.unsealed_since_us, "anchor": self.anchor,
                "findings": [f.to_dict() for f in self.findings],
                **{name: dict(summary) for name, summary in self.checks.items()}}


@dataclass(frozen=True, slots=True)
class Finding:
    """Something a check beside the chain's found wrong, at an index when it has one."""

    check: str  # the check's name ("checkpoints", …)
    code: str  # stable: docs/signatures.md lists them
    index: int | None
    reason: str
    kid: str | None = None  # the key it concerns, if any

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "code": self.code, "index": self.index,
                "reason": self.reason, "kid": self.kid}


def verify(events: Iterable[AuditEvent], *, head: tuple[int, str] | None = None,
           anchor: tuple[int, str] | None = None) -> Verification:
    """Check the chain; report the first bad index (a gap, a changed field, a broken link).

    ``head`` is the store's record of the last index and hash (``Store.audit_head()``):
    with it, events removed from the *end* are caught too, which no chain can show alone.
    ``anchor`` is the newest retention checkpoint (index and hash of the last purged
    event, ``signoff.store.retention``): the chain is checked from the event after it.
    """
    if anchor is not None and anchor[0] > 0:
        result = _walk(events, head, anchor[0] + 1, anchor[1])
        return dataclasses.replace(result, anchor=anchor[0])
    return _walk(events, head, 1, GENESIS)


def _walk(events: Iterable[AuditEvent], head: tuple[int, str] | None, expected: int,
          prev: str) -> Verification:
    count = 0
    for event in events:
        count += 1
        if event.index != expected:
            return Verification(False, count, expected,
                                f"event {expected} is missing (next is {event.index})")
        if event.prev_hash != prev:
            return Verification(False, count, event.index, "link to the previous event broken")
        recomputed = chain_hash(prev, index=event.index, at_us=event.at_us, kind=event.kind,
                                request_id=event.request_id, actor=event.actor, data=event.data)
        if recomputed != event.hash:
            return Verification(False, count, event.index, "content does not match its hash")
        prev = event.hash
        expected += 1
    if head is not None:
        last = expected - 1
        head_index, head_hash = head
        if head_index > last:
            return Verification(False, count, last + 1,
                                f"the log ends at {last} but its head records {head_index}")
        if head_index < last or head_hash != prev:
            return Verification(False, count, head_index if head_index < last else last,
                                "the recorded head does not match the last event")
    return Verification(True, count)
