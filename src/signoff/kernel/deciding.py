"""Taking a decision: authenticate, check, record, maybe transition — in one transaction.

Everything a decision depends on is read under the request's row lock and
written in the same transaction with its audit events — or, on PostgreSQL, where
the row and the approver are all it reads, known or read without the lock and
written in one statement that requires them unchanged (``fast_paths``, an optimisation
of the rule in ``Decider.decide_locked``) — so 32 approvers racing
produce exactly one transition, and a crash leaves either the whole decision or
none of it.

Rules (docs/kernel.md): the approver is the authenticated identity; agents never
decide; the requester and the agent's own identity never decide their request, and a
party of its thread neither edits it nor grants the thread (``signoff.kernel.ownership``); a role
list means "at least one of these"; the server's clock judges expiry; one
rejection rejects; ``required_approvals`` distinct approvers must approve the
*same* arguments hash (an edit starts a new count on the new hash). An approval
may also switch the thread to ``auto`` (``signoff.kernel.auto_thread``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from signoff import inputs
from signoff.audit import AuditKind, to_us
from signoff.canonical import args_hash, canonical_text, hash_bytes, parse_args
from signoff.errors import (
    ArgsChanged,
    Conflict,
    Expired,
    Forbidden,
    InvalidArguments,
    InvalidDecision,
    NotFound,
    Unauthenticated,
)
from signoff.identity import Identity
from signoff.ids import new_id
from signoff.kernel import (
    assertions,
    auto_thread,
    fast_paths,
    grants,
    lifecycle,
    quorum,
    write_evidence,
)
from signoff.kernel.hooks import Hooks
from signoff.kernel.ownership import decision_refusal, refusal
from signoff.kernel.receipts import Receipts
from signoff.kernel.tools import ToolEntry
from signoff.kernel.written_requests import WrittenRequests
from signoff.model import (
    ApprovalRequest,
    ApproveScope,
    Decision,
    DecisionKind,
    DecisionRecord,
    Effect,
    Rejection,
    RequestStatus,
    ToolCall,
    Verdict,
)
from signoff.policy import Policy
from signoff.policy.modes import trusted_context
from signoff.store.base import Store, Tx


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionResult:
    request: ApprovalRequest
    decision_id: str
    approvals: int  # distinct approvals of the arguments that would run
    required: int
    transitioned: bool  # this decision moved the request out of pending
    replayed: bool = False  # an idempotent replay of an earlier identical decision
    # Auto-approve this thread: the thread's mode now, and the pause's other requests
    # this decision approved too
    review_mode: str | None = None
    also_approved: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"request_id": self.request.id, "status": self.request.status.value,
                "decision_id": self.decision_id, "approvals": self.approvals,
                "required": self.required, "transitioned": self.transitioned,
                "replayed": self.replayed, "review_mode": self.review_mode,
                "also_approved": list(self.also_approved)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """One decision as asked: its input checked, and an edit judged, before any row is
    read under a lock."""

    request_id: str
    decision: Decision
    identity: Identity  # as authenticated; the rule reads it again with the row
    edited: dict[str, Any] | None  # an edit's arguments, parsed
    edit_writes: write_evidence.WriteEvidence | None  # what the edited call will change
    key: str | None  # the idempotency key, scoped to the approver
    body: str  # what a replay under ``key`` must have asked
    via: str | None
    now: float


class Decider:
    """The decide half of the gate: one authenticated decision, recorded whole or not at all."""

    def __init__(self, store: Store, policy: Policy, *, tools: dict[str, ToolEntry],
                 written: WrittenRequests, hooks: Hooks, clock: Callable[[], float],
                 inbox_url: Callable[[], str | None] = lambda: None,
                 receipts: Receipts | None = None) -> None:
        self.store = store
        self.inbox_url = inbox_url  # where a passkey approval is given (a refusal says)
        self.receipts = receipts  # signs the receipt of each approval (kernel/receipts.py)
        self.policy = policy  # an edit is judged again; grants take its tool's shell argument
        self.tools = tools  # the gate's registry, shared: an edit is validated by its tool
        self.written = written  # requests proposed here: decided without reading them again
        self.hooks = hooks
        self.clock = clock

    def decide(self, request_id: str, decision: Decision, *, identity: Identity,
               idempotency_key: str | None = None, via: str | None = None) -> DecisionResult:
        """Record one authenticated decision. Raises ``Forbidden``, ``NotFound``,
        ``Conflict`` (``already_decided``, ``already_voted``, ``idempotency_conflict``),
        ``Expired`` or ``InvalidDecision``; never half-writes. ``via``: the channel the
        decision arrived by (``"resume"``), kept in its audit event."""
        result = self._decide(request_id, decision, identity=identity,
                              idempotency_key=idempotency_key, via=via)
        if self.hooks.after_decision:
            self.hooks.after_decision(request_id)
        return result

    def _decide(self, request_id: str, decision: Decision, *, identity: Identity,
                idempotency_key: str | None, via: str | None) -> DecisionResult:
        """The rule is ``decide_locked``: the row held, every check and every write in one
        transaction. Where the store can require a row unchanged inside a write
        (PostgreSQL), ``fast_paths.decide_as_written`` may take the same decision first, in
        fewer round trips; ``None`` from it means it did not, and wrote nothing."""
        asked = self._asked(request_id, decision, identity, idempotency_key, via)
        taken = fast_paths.decide_as_written(self, asked) if self.store.guards_unread else None
        return taken if taken is not None else self.decide_locked(asked)

    def decide_locked(self, asked: Asked) -> DecisionResult:
        """The decision on the row held under its lock, with the approver as stored now."""
        request_id, decision, now = asked.request_id, asked.decision, asked.now
        expired: ApprovalRequest | None = None
        with self.store.transaction() as tx:
            # Lock first, then look for the key: a concurrent retry with the same key waits
            # for the first one to commit and then finds its answer (READ COMMITTED).
            # The approver as stored now is read with the row: one round trip.
            request, current = tx.get_request_and_user(request_id, asked.identity.name)
            if asked.key is not None:
                stored = tx.idempotent_response(asked.key)
                if stored is not None:
                    return self._replay(tx, request_id, asked.body, stored)
            if request is None:
                raise NotFound(f"no approval request {request_id!r}", code="not_found")
            identity = self._current_identity(asked.identity, current)
            self._authorize(tx, request, identity, decision)
            if request.status is RequestStatus.EXPIRED:  # by this clock, a timer or a read:
                raise Expired(f"request {request_id} expired before this decision",
                              code="expired")  # late, whoever recorded the expiry first
            if request.status is not RequestStatus.PENDING:
                raise Conflict(f"request {request_id} is already {request.status.value}",
                               code="already_decided", status=request.status.value)
            if request.expires_at is not None and now >= request.expires_at:
                expired = lifecycle.transition(
                    tx, request, RequestStatus.EXPIRED, now=now, actor=identity.name,
                    outcome_code="expired")
            else:
                auto = decision.scope is ApproveScope.AUTO_THREAD \
                    and decision.kind is DecisionKind.APPROVE
                if auto:
                    auto_thread.may_switch(tx, request, self.policy.config.ceiling)
                result = self.apply(tx, request, decision, edited=asked.edited,
                                     identity=identity, now=now, via=asked.via,
                                     edit_writes=asked.edit_writes)
                if auto:
                    result = auto_thread.switch(
                        tx, result, identity, now, self.policy.config.default_review_mode,
                        listing=decision.listed, refused=lambda other: refusal(other, identity),
                        vote=lambda other: self.apply(
                            tx, other, Decision.approve(scope=ApproveScope.AUTO_THREAD),
                            edited=None, identity=identity, now=now))
                if asked.key is not None:
                    tx.put_idempotent_response(
                        asked.key, request_id=request_id, body_hash=asked.body,
                        response=json.dumps(result.to_dict()), at=now)
                tx.notify(request_id)
        if expired is not None:
            raise Expired(f"request {request_id} expired before this decision", code="expired")
        return result

    def _asked(self, request_id: str, decision: Decision, identity: Identity,
               idempotency_key: str | None, via: str | None) -> Asked:
        """The decision's input checked, and an edit judged, before any row is locked."""
        if not identity.may_decide:
            raise Forbidden(f"{identity.name} is an agent identity and cannot decide"
                            if not identity.disabled else f"{identity.name} is disabled",
                            code="agent_cannot_decide" if not identity.disabled
                            else "identity_disabled")
        inputs.identifier("request id", request_id)
        inputs.optional_identifier("idempotency key", idempotency_key)
        edited = self._edited_args(decision)
        body = _body_hash(request_id, decision, edited) if idempotency_key is not None else ""
        now = self.clock()
        edit_writes: write_evidence.WriteEvidence | None = None
        if idempotency_key is not None:  # keys are per approver: one never replays another's
            idempotency_key = scoped(identity.name, idempotency_key)
        if edited is not None:
            # Schema and policy checks of an edit run before the transaction: they read the
            # store (grants, rejections) and must not hold a second connection meanwhile.
            before = self.store.get_request(request_id)
            if before is not None and before.status is RequestStatus.PENDING:
                self._check_edit(before, edited)
                # What the edited call will change, read from the files now (not under a lock).
                edit_writes = write_evidence.write_evidence(self.policy, before.tool, edited)
        return Asked(request_id=request_id, decision=decision, identity=identity,
                     edited=edited, edit_writes=edit_writes, key=idempotency_key, body=body,
                     via=via, now=now)

    # ---- checks --------------------------------------------------------------------------------

    def _current_identity(self, identity: Identity, current: Identity | None) -> Identity:
        """Roles as stored now (``current``, read under the lock): a role removed a moment
        ago counts."""
        if current is None:
            raise Unauthenticated(f"{identity.name} is no longer an identity here",
                                  code="unauthenticated")
        if current.disabled:
            raise Forbidden(f"{identity.name} is disabled", code="identity_disabled")
        if not current.may_decide:
            raise Forbidden(f"{identity.name} is an agent identity and cannot decide",
                            code="agent_cannot_decide")
        return current

    def _authorize(self, tx: Tx, request: ApprovalRequest, identity: Identity,
                   decision: Decision) -> None:
        refused = refusal(request, identity)
        if refused is None and request.thread_id and (
                decision.kind is DecisionKind.EDIT or (decision.scope is not ApproveScope.ONCE
                and decision.kind is DecisionKind.APPROVE)):
            # Read under the request's lock, with the transaction's view of the thread.
            refused = decision_refusal(request, identity.name, decision,
                                       tx.thread_parties(request.thread_id))
        if refused is not None:
            raise refused

    def _edited_args(self, decision: Decision) -> dict[str, Any] | None:
        if decision.kind is DecisionKind.REJECT and not (decision.reason or "").strip():
            raise InvalidDecision("a rejection needs a reason the agent can act on",
                                  code="missing_reason")
        if decision.kind is DecisionKind.RESPOND and not (decision.message or "").strip():
            raise InvalidDecision("a response needs a message", code="missing_message")
        if decision.kind is not DecisionKind.EDIT:
            return None
        try:
            return parse_args(decision.args)
        except InvalidArguments as exc:
            raise InvalidDecision(f"edited arguments: {exc.message}", code="invalid_edit") from exc

    def _check_edit(self, request: ApprovalRequest, args: dict[str, Any]) -> None:
        tool = self.tools.get(request.tool)
        if tool is not None:
            tool.validate(args)
        # Manual: re-validation asks what the call needs from humans; it never consults the
        # auto reviewer again (a call is reviewed once, when proposed).
        context = trusted_context(thread_id=request.thread_id, session_id=request.session_id,
                                  principal=request.principal, parent_call=request.parent_call,
                                  review_mode="manual")
        verdict = self.policy.evaluate(
            ToolCall(id=request.call_id, name=request.tool, args=args), context)
        if verdict.effect is Effect.DENY:
            raise InvalidDecision(f"the policy denies the edited call: {verdict.message}",
                                  code="edit_denied")
        stronger = needs_more_review(verdict, request)
        if stronger:
            raise InvalidDecision(f"the edited call needs more review than this request "
                                  f"({stronger}); propose it as a new call",
                                  code="edit_escalates")

    # ---- applying ------------------------------------------------------------------------------

    def apply(self, tx: Tx, request: ApprovalRequest, decision: Decision, *,
               edited: dict[str, Any] | None, identity: Identity, now: float,
               via: str | None = None,
               edit_writes: write_evidence.WriteEvidence | None = None) -> DecisionResult:
        if decision.expected_args_hash is not None \
                and decision.expected_args_hash != request.run_hash:
            raise ArgsChanged(
                f"the arguments of {request.id} changed since they were shown "
                f"({decision.expected_args_hash} → {request.run_hash}); decide on the "
                "arguments that would run", args_hash=request.run_hash, args=request.run_args)
        record_id = new_id("dec_")
        kind = decision.kind
        target_hash = request.run_hash
        changes: dict[str, Any] = {}
        if kind is DecisionKind.EDIT:
            assert edited is not None
            target_hash = args_hash(edited)
            if target_hash != request.run_hash:
                changes = {"approved_args": canonical_text(edited), "approved_hash": target_hash}
                if edit_writes is not None:
                    changes.update(_edited_writes(request, edit_writes))
            if changes or decision.reason:
                # The editor's reason reaches the agent with the outcome (outcome_of).
                changes.update(outcome_code="edited", outcome_reason=decision.reason)
        approving = kind in (DecisionKind.APPROVE, DecisionKind.EDIT)
        signed = assertions.verified(
            tx, request, kind=kind, target_hash=target_hash, approver=identity.name,
            assertion=decision.assertion, now=now, inbox_url=self.inbox_url(),
        ) if approving and request.passkey else None
        # A pending request with a quorum of one has no decision yet: any approve or edit
        # would have approved it and a reject or respond would have closed it (we hold its
        # row), so there is nothing to read.
        earlier = tx.decisions(request.id) if request.approvals_required > 1 else []
        if approving and any(d.approver == identity.name and d.args_hash == target_hash
                             for d in earlier):
            raise Conflict(f"{identity.name} already approved these arguments",
                           code="already_voted", status=request.status.value)
        record = DecisionRecord(
            id=record_id, request_id=request.id, kind=kind, approver=identity.name,
            created_at=now, args_hash=target_hash if approving else None,
            reason=decision.reason, alternatives=decision.alternatives,
            args=changes.get("approved_args"), message=decision.message, scope=decision.scope,
            assertion=signed)
        tx.insert_decision(record)
        data: dict[str, Any] = {
            "kind": kind.value, "decision_id": record_id,
            "args_hash": target_hash if approving else None,
            "reason": decision.reason, "scope": decision.scope.value,
            "alternatives": list(decision.alternatives)}
        if via is not None:
            data["via"] = via
        if signed is not None:
            data["passkey"] = json.loads(signed)["passkey"]
        tx.record_audit(AuditKind.DECISION_RECORDED, at_us=to_us(now), request_id=request.id,
                        actor=identity.name, data=data)
        if changes:
            moved = tx.update_request(request, updated_at=now, **changes)
            assert moved is not None  # we hold the row lock
            request = moved
        approvals = approving + sum(1 for d in earlier
                                    if d.kind in (DecisionKind.APPROVE, DecisionKind.EDIT)
                                    and d.args_hash == request.run_hash)
        after = request
        if kind is DecisionKind.REJECT:
            after = lifecycle.transition(
                tx, request, RequestStatus.REJECTED, now=now, actor=identity.name,
                outcome_code="rejected", outcome_reason=decision.reason,
                alternatives=decision.alternatives)
            if request.thread_id:
                tx.put_rejection(Rejection(
                    thread_id=request.thread_id, tool=request.tool, args_hash=request.args_hash,
                    reason=decision.reason or "rejected", alternatives=decision.alternatives,
                    request_id=request.id), at=now)
        elif kind is DecisionKind.RESPOND:
            after = lifecycle.transition(
                tx, request, RequestStatus.RESPONDED, now=now, actor=identity.name,
                response=decision.message)
        elif approvals >= request.approvals_required and (
                not request.requires or quorum.met(request.requires, [
                    user for _, user in tx.approvers(request.id, request.run_hash)
                    if user is not None and user.may_decide])):
            after = lifecycle.transition(
                tx, request, RequestStatus.APPROVED, now=now, actor=identity.name)
            if self.receipts is not None:  # signed with the approval, or neither commits
                self.receipts.issue(tx, after, record, identity, earlier, now=now)
        if (approving and decision.scope is ApproveScope.THREAD and request.thread_id
                and after.status is RequestStatus.APPROVED
                and all(d.scope is ApproveScope.THREAD for d in tx.decisions(request.id)
                        if d.kind in (DecisionKind.APPROVE, DecisionKind.EDIT)
                        and d.args_hash == request.run_hash)):
            # A standing approval needs the whole quorum: one of two approvers cannot grant
            # future calls that the policy says need two.
            grants.grant_thread(tx, request, decision, identity, now=now,
                               config=self.policy.config)
        return DecisionResult(request=after, decision_id=record_id, approvals=approvals,
                              required=request.approvals_required,
                              transitioned=after.status is not RequestStatus.PENDING)

    def _replay(self, tx: Tx, request_id: str, body: str,
                stored: tuple[str, str, str]) -> DecisionResult:
        stored_request, stored_body, response = stored
        if stored_request != request_id or stored_body != body:
            raise Conflict("this idempotency key was used for a different decision",
                           code="idempotency_conflict")
        data = json.loads(response)
        request = tx.get_request(request_id)
        assert request is not None
        return DecisionResult(request=request, decision_id=data["decision_id"],
                              approvals=data["approvals"], required=data["required"],
                              transitioned=data["transitioned"], replayed=True,
                              review_mode=data.get("review_mode"),
                              also_approved=tuple(data.get("also_approved") or ()))


def _edited_writes(request: ApprovalRequest,
                   evidence: write_evidence.WriteEvidence) -> dict[str, Any]:
    """An edit shows what the *edited* call will change; a file bound when the call was
    proposed keeps that version (what the first approver saw is the state the write must
    still meet), a file only the edit writes is bound as it was read for the edit."""
    fresh, versions = evidence
    kept = {k: v for k, v in request.resource_versions.items()
            if not k.startswith(write_evidence.PREFIX)}
    for key, version in versions.items():
        kept[key] = request.resource_versions.get(key, version)
    return {"changes": tuple({**change, "edited": True} for change in fresh),
            "resource_versions": kept}


def approvers_of(request: ApprovalRequest, decisions: Sequence[DecisionRecord]) -> list[str]:
    """The distinct approvers of the arguments that would run (approve and edit decisions on
    ``run_hash``), sorted: the quorum count as it stands."""
    return sorted({d.approver for d in decisions
                   if d.kind in (DecisionKind.APPROVE, DecisionKind.EDIT)
                   and d.args_hash == request.run_hash})


def needs_more_review(verdict: Verdict, request: ApprovalRequest) -> str | None:
    """What a fresh verdict asks for that the request did not: more approvals, other
    roles, or a mandatory human. ``None`` when the request already asked for enough."""
    if verdict.effect not in (Effect.ASK, Effect.BLOCKED):
        return None
    if verdict.approvals > request.approvals_required:
        return f"{verdict.approvals} approvals instead of {request.approvals_required}"
    if verdict.roles and not set(verdict.roles) <= set(request.roles):
        return f"roles {', '.join(verdict.roles)}"
    if verdict.requires and not quorum.covers(request.requires, verdict.requires):
        return f"approvals {quorum.describe(verdict.requires)}"
    if verdict.mandatory and not request.mandatory:
        return "a mandatory human review"
    if verdict.passkey and not request.passkey:
        return "approvals with a passkey"
    return None


def scoped(name: str, key: str) -> str:
    """An idempotency key as ``name``'s own: one approver never replays another's."""
    return f"{len(name)}:{name}:{key}"


def _body_hash(request_id: str, decision: Decision, edited: dict[str, Any] | None) -> str:
    body = {"request_id": request_id, "kind": decision.kind.value, "reason": decision.reason,
            "alternatives": list(decision.alternatives), "message": decision.message,
            "scope": decision.scope.value,
            "args": canonical_text(edited) if edited is not None else None,
            "grant_args": dict(decision.grant_args) if decision.grant_args else None}
    if decision.expected_args_hash is not None:
        body["expected_args_hash"] = decision.expected_args_hash
    if decision.listed:
        body["listed"] = " ".join(f"{i}={h}" for i, h in sorted(decision.listed))
    return hash_bytes(json.dumps(body, sort_keys=True).encode())

