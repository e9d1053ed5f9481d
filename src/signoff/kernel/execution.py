"""Running an approved call: re-validate, claim, run, record — at most once, ever.

1. **Re-validate** against the world as it is now: not expired; the canonical
   arguments that will run hash to the approved hash (and the decisions
   approved that hash); every counted approver still exists and holds a
   required role; the current policy does not deny the call; the resources the
   tool declared preconditions on have the versions recorded at request time.
   Any failure moves the request to ``invalidated`` with a code, and the agent
   is told why.
2. **Claim** ``approved → executing`` by compare-and-set, with a fencing token
   (a store-wide counter) and a lease. Only one claimant can win.
3. **Run** the tool with the request id as its idempotency key.
4. **Record** ``executing → succeeded | failed`` — only by the holder of the
   fencing token. A run that dies leaves ``executing``; ``recover()`` turns an
   expired lease into ``unknown`` (a tool's ``verify`` hook may settle it),
   and never runs the call again.
"""

from __future__ import annotations

import contextvars
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from signoff import inputs
from signoff.canonical import args_hash, parse_args
from signoff.errors import Conflict, InvalidArguments, NotFound
from signoff.identity import Identity
from signoff.kernel import assertions, lifecycle, quorum, write_evidence
from signoff.kernel.deciding import needs_more_review
from signoff.kernel.hooks import Hooks
from signoff.kernel.outcomes import Outcome, OutcomeKind, load_result, outcome_of
from signoff.kernel.reading import Reader
from signoff.kernel.tools import ToolEntry
from signoff.model import (
    ApprovalRequest,
    Effect,
    RequestStatus,
    ToolCall,
)
from signoff.policy import Policy
from signoff.policy.modes import trusted_context
from signoff.store.base import Approvals, Store, Tx

_current: contextvars.ContextVar[Execution | None] = contextvars.ContextVar(
    "signoff_execution", default=None)


@dataclass(frozen=True, slots=True)
class Execution:
    """Handed to a running tool: ``request_id`` doubles as its idempotency key."""

    request_id: str
    fencing_token: int
    args: dict[str, Any] = field(default_factory=dict)
    receipt: str | None = None  # the approval's signed receipt, when claimed (signoff.receipts)


def current_execution() -> Execution | None:
    """The approved execution the calling tool is part of, if any."""
    return _current.get()


# What the unlocked checks found (``None``: nothing) and the arguments they parsed.
Checked = tuple[tuple[str, str] | None, dict[str, Any] | None]


class Executor:
    """The gate's executor: re-validates, claims, runs and records approved calls."""

    def __init__(self, store: Store, reader: Reader, *, revalidation_policy: Policy,
                 tools: dict[str, ToolEntry], lease: float, executor_id: str, hooks: Hooks,
                 clock: Callable[[], float]) -> None:
        self.store = store
        self.reader = reader  # reads a request, or ``NotFound``
        # Asked without grants or rejection memory: no store reads on the way to running.
        self.revalidation_policy = revalidation_policy
        self.tools = tools  # the gate's registry, shared
        self.lease = lease
        self.executor_id = executor_id
        self.hooks = hooks
        self.clock = clock

    # ---- claim and report: the primitive any executor uses ---------------------------------------

    def claim(self, request_id: str, *, executor: str | None = None,
              request: ApprovalRequest | None = None,
              approvals: Approvals | None = None) -> Execution | Outcome:
        """Re-validate and claim an approved request. Returns the ``Execution`` to run, or
        the ``Outcome`` that says why not (someone else holds it, it was invalidated, …).
        ``request`` is the row as the caller just read it (saves reading it again), and
        ``approvals`` its approvals as read with it (``Store.request_to_run``)."""
        for attempt in range(5):
            if attempt or request is None:
                request, approvals = self.reader.get(request_id), None
            if request.status is not RequestStatus.APPROVED:
                return outcome_of(request)
            checked = self._revalidate_outside(request)
            now = self.clock()
            claimed: Execution | Outcome | None
            if approvals is not None and checked[0] is None and not request.passkey \
                    and self._revalidate_approvers(request, approvals.of) is None:
                claimed = self._claim_as_read(request, checked, now, executor, approvals)
                if claimed is None:  # it changed since it was read: read it again
                    continue
            else:
                with self.store.transaction() as tx:
                    # Same version and arguments under the lock, or it moved (or was
                    # changed behind the store's back) after the checks: check again.
                    held = tx.hold_request(request)
                    if held is None:
                        continue
                    claimed = self._claim_locked(tx, request, checked, now, executor,
                                                 approvers=held)
            if isinstance(claimed, Execution) and self.hooks.after_claim:
                self.hooks.after_claim(request_id)
            return claimed
        raise Conflict(f"request {request_id} kept changing while being claimed",
                       code="claim_contended")

    def _claim_as_read(self, request: ApprovalRequest, checked: Checked, now: float,
                       executor: str | None, approvals: Approvals) -> Execution | None:
        """Claim without holding the row first (PostgreSQL: one round trip less). Every
        check passed on the row and approvals as read, and the claim's compare-and-set
        requires, inside the database, that they still are — the version, the arguments
        and their hashes, every approver as stored — or it writes nothing. ``None``: they
        changed (the caller reads again)."""
        actor = executor or self.executor_id
        try:
            with self.store.transaction() as tx:
                token = lifecycle.claim(tx, request, now=now, actor=actor,
                                        lease_until=now + self.lease, last=True,
                                        approvals=approvals)
        except Conflict as exc:
            if exc.code == "changed_underneath":
                return None
            raise
        args = checked[1]
        assert args is not None  # parsed from the very text that was checked (and claimed)
        return Execution(request.id, token, args)

    def _claim_locked(self, tx: Tx, locked: ApprovalRequest, checked: Checked, now: float,
                      executor: str | None, *,
                      approvers: list[tuple[str, Identity | None]] | None = None
                      ) -> Execution | Outcome:
        """With the row locked and the outside checks done: invalidate or claim
        (``approvers``: as read with the lock, else read here)."""
        actor = executor or self.executor_id
        problem, args = checked
        if problem is None:
            if approvers is None:
                approvers = tx.approvers(locked.id, locked.run_hash)
            problem = self._revalidate_approvers(locked, approvers)
        if problem is None and locked.passkey:  # every approval proves itself again
            problem = assertions.recheck(tx, locked, tx.decisions(locked.id))
        if problem is not None:
            code, reason = problem
            moved = lifecycle.transition(
                tx, locked, RequestStatus.INVALIDATED, now=now, actor=actor, outcome_code=code,
                outcome_reason=reason)
            return outcome_of(moved)
        # The claim is the transaction's last write (both callers leave it right after):
        # PostgreSQL commits it with the claim, in one round trip.
        token = lifecycle.claim(tx, locked, now=now, actor=actor, lease_until=now + self.lease,
                                last=True)
        assert args is not None  # parsed from the very text that was checked (and held)
        return Execution(locked.id, token, args)

    def heartbeat(self, execution: Execution, *, seconds: float | None = None) -> bool:
        """Extend a running execution's lease (a long tool calls this now and then); ``False``
        once the execution no longer holds the request."""
        now = self.clock()
        with self.store.transaction() as tx:
            locked = tx.get_request(execution.request_id, lock=True)
            if locked is None or locked.status is not RequestStatus.EXECUTING \
                    or locked.fencing_token != execution.fencing_token:
                return False
            tx.update_request(locked, lease_until=now + (seconds or self.lease))
        return True

    def report(self, execution: Execution, *, result: Any = None,
               error: str | None = None, actor: str | None = None) -> Outcome:
        """Record what the claimed run did; only the fencing-token holder may. ``actor``:
        who reports (an agent over HTTP); this process's executor id by default."""
        if self.hooks.before_result:
            self.hooks.before_result(execution.request_id)
        now = self.clock()
        if error is not None:  # a tool's own words: made storable, never refused (signoff.inputs)
            error = inputs.stored_text(str(error), inputs.ERROR_MAX)
        target = RequestStatus.FAILED if error is not None else RequestStatus.SUCCEEDED
        text = _result_text(result) if error is None else None
        # The common case, one statement and its own transaction: still executing, still
        # ours — the move and its audit event together.
        if self.store.finish_execution(
                execution.request_id, execution.fencing_token,
                event=lifecycle.move_event(RequestStatus.EXECUTING, target, now=now,
                                           actor=actor or self.executor_id, changes={}),
                status=target, updated_at=now, result=text, error=error):
            if error is not None:
                return Outcome(kind=OutcomeKind.FAILED, request_id=execution.request_id,
                               error=error)
            return Outcome(kind=OutcomeKind.EXECUTED, request_id=execution.request_id,
                           result=load_result(text))
        with self.store.transaction() as tx:  # not ours, or not executing any more: why
            locked = tx.get_request(execution.request_id, lock=True)
            if locked is None:
                raise NotFound(f"no approval request {execution.request_id!r}")
            if locked.fencing_token != execution.fencing_token or locked.status not in (
                    RequestStatus.EXECUTING, RequestStatus.UNKNOWN):
                raise Conflict("this execution no longer holds the request (stale fencing "
                               "token)", code="stale_fencing_token", status=locked.status.value)
            moved = lifecycle.transition(
                tx, locked, target, now=now, actor=actor or self.executor_id, result=text,
                error=error)
        return outcome_of(moved)

    def abandon(self, execution: Execution, *, reason: str, actor: str | None = None) -> Outcome:
        """The run lost sight of its call mid-way (the server that ran it died, its client
        cancelled it): it may or may not have happened. ``unknown`` at once, for ``verify``
        or a human to settle (``signoff recover``), never run again. Only the holder of the
        fencing token may; a request that moved on meanwhile keeps its state."""
        now = self.clock()
        with self.store.transaction() as tx:
            locked = tx.get_request(execution.request_id, lock=True)
            if locked is None:
                raise NotFound(f"no approval request {execution.request_id!r}")
            if locked.status is RequestStatus.EXECUTING \
                    and locked.fencing_token == execution.fencing_token:
                locked = lifecycle.transition(
                    tx, locked, RequestStatus.UNKNOWN, now=now, actor=actor or self.executor_id,
                    outcome_code="outcome_lost",
                    outcome_reason=inputs.stored_text(reason, inputs.ERROR_MAX))
                tx.notify(execution.request_id)
        return outcome_of(locked)

    def execute(self, request_id: str, *, request: ApprovalRequest | None = None,
                approvals: Approvals | None = None) -> Outcome:
        """Claim, run the registered tool, record. Never runs a request twice."""
        return self._execute(request_id, request, approvals)[0]

    def _execute(self, request_id: str, request: ApprovalRequest | None = None,
                 approvals: Approvals | None = None) -> tuple[Outcome, bool]:
        """``execute``, also saying whether *this* call ran the tool."""
        if request is None:
            request, approvals = self.reader.get(request_id), None
        entry = self.tools.get(request.tool)
        if request.status is RequestStatus.APPROVED and (entry is None or entry.is_async):
            raise NotFound(f"no synchronous tool {request.tool!r} is registered here",
                           code="no_tool")
        claimed = self.claim(request_id, request=request, approvals=approvals)
        if isinstance(claimed, Outcome):
            return claimed, False
        assert entry is not None
        return self._run_claimed(entry, claimed), True

    def _run_claimed(self, entry: ToolEntry, claimed: Execution) -> Outcome:
        token = _current.set(claimed)
        try:
            value = entry.fn(**_call_args(entry, claimed))
        except Exception as exc:  # the tool's failure is recorded, not raised
            return self.report(claimed, error=f"{type(exc).__name__}: {exc}")
        finally:
            _current.reset(token)
        return self.report(claimed, result=value)

    # ---- re-validation ---------------------------------------------------------------------------

    def _revalidate_outside(self, request: ApprovalRequest) -> Checked:
        """Checks that need no lock: expiry, hash, policy, resources. Returns the problem
        found (``None``: none) and the parsed arguments that were checked."""
        run_args = _frozen_args(request.run_args)
        return self._problem_outside(request, run_args), run_args

    def _problem_outside(self, request: ApprovalRequest,
                         run_args: dict[str, Any] | None) -> tuple[str, str] | None:
        now = self.clock()
        if request.expires_at is not None and now >= request.expires_at:
            return "expired", "the approval expired before the call ran"
        if run_args is None:
            return ("args_hash_mismatch", "the stored arguments no longer parse")
        # Manual: re-validation asks what the call needs from humans; it never consults the
        # auto reviewer again (a call is reviewed once, when proposed).
        context = trusted_context(thread_id=request.thread_id, session_id=request.session_id,
                                  principal=request.principal, parent_call=request.parent_call,
                                  review_mode="manual")
        # Grants can only weaken a verdict and rejection memory is ignored here, so the
        # policy is asked without them: no store reads on the way to running.
        verdict = self.revalidation_policy.evaluate(
            ToolCall(id=request.call_id, name=request.tool, args=run_args), context)
        # An ask verdict carries the args hash it computed; anything else: compute it.
        run_hash = verdict.args_hash or args_hash(run_args)
        if run_hash != request.run_hash:
            return ("args_hash_mismatch",
                    "the arguments to run do not hash to the approved hash")
        if verdict.effect is Effect.DENY and verdict.code != "rejected_before":
            return "policy_changed", f"the current policy denies this call: {verdict.message}"
        stronger = needs_more_review(verdict, request)
        if stronger:
            return "policy_changed", f"the current policy needs more review: {stronger}"
        recorded = dict(request.resource_versions)
        files = {k: v for k, v in recorded.items() if k.startswith(write_evidence.PREFIX)}
        declared = {k: v for k, v in recorded.items() if k not in files}
        entry = self.tools.get(request.tool)
        if entry is not None and entry.preconditions:
            try:
                now_versions = entry.versions(run_args)
            except Exception as exc:  # a precondition that cannot be read is a change
                return "resource_changed", f"a precondition could not be read: {exc}"
            if now_versions != declared:
                changed = sorted(k for k in now_versions
                                 if now_versions[k] != declared.get(k))
                return ("resource_changed",
                        f"changed since approval: {', '.join(changed) or 'declared resources'}")
        if files:
            # The files the write evidence was read from: what approvers saw is what the
            # write applies to (registered tool or not).
            now_files = write_evidence.file_versions_now(self.revalidation_policy, files)
            moved = sorted(k[len(write_evidence.PREFIX):] for k, v in files.items()
                           if now_files.get(k) != v)
            if moved:
                return ("resource_changed",
                        f"changed since the request was made, so the change approvers saw no "
                        f"longer applies: {', '.join(moved)}")
        return None

    def _revalidate_approvers(self, request: ApprovalRequest,
                              approvers: list[tuple[str, Identity | None]]
                              ) -> tuple[str, str] | None:
        """Under the lock: the approvals of the hash that will run still add up."""
        valid: list[Identity] = []
        lost: list[str] = []
        for approver, user in approvers:
            if user is None or not user.may_decide or not user.holds_any(request.roles):
                lost.append(approver)
                continue
            valid.append(user)
        if len(valid) < request.approvals_required or (
                request.requires and not quorum.met(request.requires, valid)):
            if lost:
                return ("approver_lost_role",
                        f"{', '.join(lost)} no longer hold(s) a required role")
            if len(valid) >= request.approvals_required:
                return ("approver_lost_role", "the approvers' roles no longer fill "
                        f"{quorum.describe(request.requires)}")
            return "args_hash_mismatch", "no approval matches the arguments that would run"
        return None

    # ---- the executor loop ---------------------------------------------------------------------

    def work(self, *, limit: int | None = None) -> int:
        """An executor loop: run approved requests whose tool is registered here until none
        is left (or ``limit`` ran); returns how many *this* process ran.

        Safe in many processes at once. Each request is taken with its row locked
        (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so executors pass each other by instead
        of queueing; ``BEGIN IMMEDIATE`` on SQLite), re-validated and claimed in that
        same transaction, so exactly one process runs it.
        """
        ran = 0
        skipped: set[str] = set()
        while limit is None or ran < limit:
            claimed: Execution | Outcome | None = None
            with self.store.transaction() as tx:
                for request_id in tx.approved_ids(len(skipped) + 1):
                    if request_id in skipped:
                        continue
                    locked = tx.get_request(request_id, lock=True)
                    if locked is None or locked.status is not RequestStatus.APPROVED:
                        continue
                    entry = self.tools.get(locked.tool)
                    if entry is None or entry.is_async:
                        skipped.add(request_id)  # another process has this tool
                        continue
                    now = self.clock()
                    claimed = self._claim_locked(tx, locked, self._revalidate_outside(locked),
                                                 now, None)
                    break
            if claimed is None:
                return ran
            if isinstance(claimed, Execution):
                if self.hooks.after_claim:
                    self.hooks.after_claim(claimed.request_id)
                entry = self.tools[self.reader.get(claimed.request_id).tool]
                self._run_claimed(entry, claimed)
                ran += 1
        return ran

    async def arun_claimed(self, entry: ToolEntry, claimed: Execution) -> Outcome:
        """``_run_claimed`` for an async tool: only the tool is awaited on the loop."""
        import asyncio  # noqa: PLC0415 (a sync caller never pays for it)

        token = _current.set(claimed)
        try:
            value = await entry.fn(**_call_args(entry, claimed))
        except Exception as exc:
            return await asyncio.to_thread(functools.partial(
                self.report, claimed, error=f"{type(exc).__name__}: {exc}"))
        finally:
            _current.reset(token)
        return await asyncio.to_thread(functools.partial(self.report, claimed, result=value))


def _frozen_args(text: str) -> dict[str, Any] | None:
    """The stored arguments parsed as strictly as a proposal's, or ``None`` if they no
    longer parse (someone wrote the row behind the store's back)."""
    try:
        return parse_args(text)
    except InvalidArguments:
        return None


def _call_args(entry: ToolEntry, execution: Execution) -> dict[str, Any]:
    args = dict(execution.args)
    if entry.wants_key:
        args["idempotency_key"] = execution.request_id
    return args


def _result_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return json.dumps({"repr": repr(value)})
