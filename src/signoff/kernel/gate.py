"""``Gate``: where an agent's tool call meets the policy, the humans and the store.

    gate = Gate(Policy.load("signoff.toml"), SqliteStore("signoff.db"))

    @gate.tool()
    def write_file(path: str, content: str) -> int: ...

    write_file(path="notes.txt", content="hi")   # allowed → runs; ask → waits for a human

Faces: ``check`` (the verdict only), ``propose`` (verdict → allowed / denied /
blocked / pending with its request), ``decide`` (an authenticated decision),
``resume`` (the outcome of a request, running it once if approved), ``run``
(propose, wait, resume). Async twins (``apropose``, ``aresume``, ``arun``,
``adecide``) share the same implementation: the store work runs in a worker
thread and only an async tool itself is awaited on the loop.

Waiting: ``wait`` re-reads the request only when the store says something may
have changed (an in-process commit, ``PRAGMA data_version`` for other SQLite
processes, ``LISTEN/NOTIFY`` on PostgreSQL), never in a tight loop.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar, overload

from signoff.canonical import parse_args
from signoff.errors import ConfigurationError, NotFound
from signoff.identity import Identity
from signoff.kernel import lifecycle
from signoff.kernel.admin import Administering
from signoff.kernel.cancelling import Cancelling
from signoff.kernel.deciding import Deciding, DecisionResult
from signoff.kernel.execution import Execution, Hooks, _call_args, _current, outcome_of
from signoff.kernel.known import KnownRequests
from signoff.kernel.outcomes import (
    Blocked,
    Denied,
    Outcome,
    OutcomeKind,
    Proposal,
    ProposalKind,
    Rejected,
    Responded,
    StillPending,
)
from signoff.kernel.proposing import Proposing
from signoff.kernel.reads import ThreadReads
from signoff.kernel.recovery import Recovering
from signoff.kernel.tools import Precondition, ToolEntry, Verify
from signoff.kernel.verdicts import VerdictLog
from signoff.model import (
    ApprovalRequest,
    Decision,
    RequestStatus,
    RunContext,
    ToolCall,
)
from signoff.policy import Policy
from signoff.policy.guarded import guard_store
from signoff.store.base import Store

P = ParamSpec("P")
R = TypeVar("R")
DEFAULT_WAIT = 3600.0


class Gate(Proposing, Deciding, Recovering, Administering, Cancelling, ThreadReads):
    def __init__(
        self,
        policy: Policy,
        store: Store,
        *,
        agent: str | None = "agent",
        clock: Callable[[], float] = time.time,
        lease: float = 300.0,
        hooks: Hooks | None = None,
        executor_id: str | None = None,
        verdict_audit: str = "batched",
    ) -> None:
        if verdict_audit not in ("batched", "sync"):
            raise ConfigurationError(f"verdict_audit must be 'batched' or 'sync', not "
                                     f"{verdict_audit!r}", code="invalid_setting")
        self.store = store
        # Allowed / denied / blocked verdicts change nothing: their audit events are batched
        # (signoff.kernel.verdicts) unless "sync" is asked for.
        self.verdicts = VerdictLog(store) if verdict_audit == "batched" else None
        # The store's database file (and its journals) is protected from the agents judged
        # here, found from the store itself, whatever it is called (policy/guarded.py).
        config = guard_store(policy.config, store)
        self.policy = Policy(config, memory=store, reviewer=policy.reviewer, clock=clock,
                             hints=policy.hints)
        self.revalidation_policy = Policy(config, reviewer=policy.reviewer, clock=clock,
                                          hints=policy.hints)
        self.clock = clock
        self.agent = agent
        self.lease = lease
        self.hooks = hooks or Hooks()
        self.tools: dict[str, ToolEntry] = {}
        self.known = KnownRequests()  # the requests proposed here (signoff.kernel.known)
        self.executor_id = executor_id or f"{socket.gethostname()}:{os.getpid()}"
        # Names this worker on the child requests it waits on (``recover`` withdraws the
        # waits of a worker that died or restarted): host, pid and a per-process boot id.
        self.worker_id = worker_id()

    # ---- deciding and resuming ------------------------------------------------------------------

    def decide(self, request_id: str, decision: Decision, *, identity: Identity,
               idempotency_key: str | None = None, via: str | None = None) -> DecisionResult:
        result = Deciding.decide(self, request_id, decision, identity=identity,
                                 idempotency_key=idempotency_key, via=via)
        if self.hooks.after_decision:
            self.hooks.after_decision(request_id)
        return result

    def resume(self, request_id: str) -> Outcome:
        """The outcome of a request now; an approved one runs here (once) if its tool is here."""
        request, approvals = self.store.request_to_run(request_id)
        if request is None:
            raise NotFound(f"no approval request {request_id!r}", code="not_found")
        if request.status is RequestStatus.APPROVED:
            entry = self.tools.get(request.tool)
            if entry is not None and not entry.is_async:
                return self.execute(request_id, request=request, approvals=approvals)
        return outcome_of(self._settled(request))

    def outcome(self, request_id: str) -> Outcome:
        """The outcome of a request now, without running anything (an overdue pending
        request is expired first). What an HTTP agent polls."""
        request = self._now(request_id)
        return outcome_of(request)

    def wait(self, request_id: str, *, timeout: float = DEFAULT_WAIT) -> Outcome:
        """Block until the request is decided (or expires, or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while True:
            since = self.store.change_token()
            request = self._now(request_id)
            if request.status is not RequestStatus.PENDING:
                return outcome_of(request)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return outcome_of(request)
            limit = remaining
            if request.expires_at is not None:
                limit = min(limit, max(0.0, request.expires_at - self.clock()) + 0.001)
            self.store.wait(request_id, timeout=limit, since=since)

    def run(self, call: ToolCall, context: RunContext | None = None, *,
            timeout: float = DEFAULT_WAIT, fn: Callable[..., Any] | None = None) -> Outcome:
        """Propose; if allowed run now; if pending wait up to ``timeout`` then resume."""
        proposal = self.propose(call, context)
        if proposal.kind is ProposalKind.ALLOWED:
            entry = self.tools.get(call.name)
            target = fn or (entry.fn if entry is not None else None)
            args = parse_args(call.args)
            if target is None:
                return Outcome(kind=OutcomeKind.APPROVED, args=args)
            try:
                return Outcome(kind=OutcomeKind.EXECUTED, result=target(**args))
            except Exception as exc:
                return Outcome(kind=OutcomeKind.FAILED, error=f"{type(exc).__name__}: {exc}")
        if proposal.kind is ProposalKind.DECIDED:
            assert proposal.request is not None
            return self.resume(proposal.request.id)
        if proposal.kind is not ProposalKind.PENDING:
            return _refusal(proposal)
        assert proposal.request is not None
        waited = self.wait(proposal.request.id, timeout=timeout)
        if waited.kind is OutcomeKind.APPROVED:
            return self.resume(proposal.request.id)
        return waited

    def _now(self, request_id: str) -> ApprovalRequest:
        """The request as it stands, a pending one past its expiry expired first (the
        server's clock judges expiry, whoever asks)."""
        return self._settled(self.store_get(request_id))

    def _settled(self, request: ApprovalRequest) -> ApprovalRequest:
        """``request`` as read, or expired first if it is pending past its expiry."""
        if request.status is RequestStatus.PENDING and request.expires_at is not None \
                and self.clock() >= request.expires_at:
            expired: ApprovalRequest = self._expire(request.id)
            return expired
        return request

    def _expire(self, request_id: str) -> Any:
        now = self.clock()
        with self.store.transaction() as tx:
            locked = tx.get_request(request_id, lock=True)
            assert locked is not None
            if locked.status is RequestStatus.PENDING and locked.expires_at is not None \
                    and now >= locked.expires_at:
                return lifecycle.transition(
                    tx, locked, RequestStatus.EXPIRED, now=now, actor="clock",
                    outcome_code="expired")
            return locked

    def flush(self) -> None:
        """Write the batched verdict audit events now (see ``signoff.kernel.verdicts``)."""
        if self.verdicts is not None:
            self.verdicts.flush()

    def close(self) -> None:
        """Flush the verdict audit and close the store."""
        if self.verdicts is not None:
            self.verdicts.close()
        self.store.close()

    def cancel(self, request_id: str, *, actor: str | None, reason: str) -> Outcome:
        """Withdraw a pending request (its caller gave up waiting: a subagent's time limit).
        A request decided meanwhile keeps its decision; the outcome says which."""
        now = self.clock()
        with self.store.transaction() as tx:
            locked = tx.get_request(request_id, lock=True)
            if locked is None:
                raise NotFound(f"no approval request {request_id!r}")
            if locked.status is RequestStatus.PENDING:
                locked = lifecycle.transition(
                    tx, locked, RequestStatus.CANCELLED, now=now, actor=actor or self.agent,
                    outcome_code="cancelled", outcome_reason=reason)
                tx.notify(request_id)
        return outcome_of(locked)

    # ---- async faces: the same implementation ------------------------------------------------

    async def apropose(self, call: ToolCall, context: RunContext | None = None) -> Proposal:
        return await asyncio.to_thread(self.propose, call, context)

    async def adecide(self, request_id: str, decision: Decision, *, identity: Identity,
                      idempotency_key: str | None = None) -> DecisionResult:
        return await asyncio.to_thread(functools.partial(
            self.decide, request_id, decision, identity=identity,
            idempotency_key=idempotency_key))

    async def aresume(self, request_id: str) -> Outcome:
        request = await asyncio.to_thread(self.store_get, request_id)
        entry = self.tools.get(request.tool)
        if entry is None or not entry.is_async or request.status is not RequestStatus.APPROVED:
            return await asyncio.to_thread(self.resume, request_id)
        claimed = await asyncio.to_thread(self.claim, request_id)
        if isinstance(claimed, Outcome):
            return claimed
        return await self._arun_claimed(entry, claimed)

    async def _arun_claimed(self, entry: ToolEntry, claimed: Execution) -> Outcome:
        token = _current.set(claimed)
        try:
            value = await entry.fn(**_call_args(entry, claimed))
        except Exception as exc:
            return await asyncio.to_thread(functools.partial(
                self.report, claimed, error=f"{type(exc).__name__}: {exc}"))
        finally:
            _current.reset(token)
        return await asyncio.to_thread(functools.partial(self.report, claimed, result=value))

    async def await_decision(self, request_id: str, *, timeout: float = DEFAULT_WAIT) -> Outcome:
        return await asyncio.to_thread(functools.partial(self.wait, request_id, timeout=timeout))

    async def arun(self, call: ToolCall, context: RunContext | None = None, *,
                   timeout: float = DEFAULT_WAIT) -> Outcome:
        proposal = await self.apropose(call, context)
        entry = self.tools.get(call.name)
        if proposal.kind is ProposalKind.ALLOWED:
            args = parse_args(call.args)
            if entry is None:
                return Outcome(kind=OutcomeKind.APPROVED, args=args)
            try:
                value = entry.fn(**args)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                return Outcome(kind=OutcomeKind.FAILED, error=f"{type(exc).__name__}: {exc}")
            return Outcome(kind=OutcomeKind.EXECUTED, result=value)
        if proposal.kind is ProposalKind.DECIDED:
            assert proposal.request is not None
            return await self.aresume(proposal.request.id)
        if proposal.kind is not ProposalKind.PENDING:
            return _refusal(proposal)
        assert proposal.request is not None
        waited = await self.await_decision(proposal.request.id, timeout=timeout)
        if waited.kind is OutcomeKind.APPROVED:
            return await self.aresume(proposal.request.id)
        return waited

    # ---- tools -----------------------------------------------------------------------------------

    @overload
    def tool(self, fn: Callable[P, R], /) -> Callable[P, R]: ...

    @overload
    def tool(self, fn: None = None, /, *, name: str | None = None,
             schema: Mapping[str, Any] | None = None,
             preconditions: Mapping[str, Precondition] | None = None,
             verify: Verify | None = None,
             summary: Callable[[Mapping[str, Any]], str] | None = None,
             expected_effect: str | Callable[[Mapping[str, Any]], str] | None = None,
             context: Callable[[], RunContext] | None = None,
             timeout: float = DEFAULT_WAIT) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

    def tool(self, fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
             schema: Mapping[str, Any] | None = None,
             preconditions: Mapping[str, Precondition] | None = None,
             verify: Verify | None = None,
             summary: Callable[[Mapping[str, Any]], str] | None = None,
             expected_effect: str | Callable[[Mapping[str, Any]], str] | None = None,
             context: Callable[[], RunContext] | None = None,
             timeout: float = DEFAULT_WAIT) -> Any:
        """Register a tool and wrap it so every call goes through the gate.

        The wrapper keeps the function's signature (sync or async). Arguments
        are passed by keyword as the call's JSON arguments. When the call does
        not run, the wrapper raises ``Denied``, ``Rejected``, ``Blocked``,
        ``Responded`` or ``StillPending`` carrying the ``Outcome``.
        """

        def register(target: Callable[..., Any]) -> Callable[..., Any]:
            tool_name = name or target.__name__
            entry = ToolEntry.build(tool_name, target, schema=schema,
                                    preconditions=dict(preconditions or {}), verify=verify,
                                    summary=summary, expected_effect=expected_effect)
            self.tools[tool_name] = entry
            signature = inspect.signature(target)

            def to_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToolCall:
                bound = signature.bind(*args, **kwargs)
                call_args = {k: v for k, v in bound.arguments.items()
                             if k != "idempotency_key"}
                return ToolCall(id="call_" + uuid.uuid4().hex, name=tool_name, args=call_args)

            if entry.is_async:
                @functools.wraps(target)
                async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                    ctx = context() if context else None
                    return _unwrap(await self.arun(to_call(args, kwargs), ctx, timeout=timeout))

                return async_wrapper

            @functools.wraps(target)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                ctx = context() if context else None
                return _unwrap(self.run(to_call(args, kwargs), ctx, timeout=timeout))

            return wrapper

        return register(fn) if fn is not None else register


class _Boot:
    """This process's boot id: random, drawn again in a forked child."""

    value = uuid.uuid4().hex[:12]

    @classmethod
    def reseed(cls) -> None:
        cls.value = uuid.uuid4().hex[:12]


os.register_at_fork(after_in_child=_Boot.reseed)


def worker_id() -> str:
    """``host:pid:boot``: names the worker waiting on a child's request."""
    return f"{socket.gethostname()}:{os.getpid()}:{_Boot.value}"


def _refusal(proposal: Proposal) -> Outcome:
    verdict = proposal.verdict
    kind = OutcomeKind.DENIED if proposal.kind is ProposalKind.DENIED else OutcomeKind.BLOCKED
    return Outcome(kind=kind, code=verdict.code, message=verdict.message)


def _unwrap(outcome: Outcome) -> Any:
    kind = outcome.kind
    if kind is OutcomeKind.EXECUTED:
        return outcome.result
    if kind is OutcomeKind.FAILED:
        raise RuntimeError(outcome.error or "the tool failed")
    if kind is OutcomeKind.REJECTED:
        raise Rejected(outcome)
    if kind is OutcomeKind.RESPONDED:
        raise Responded(outcome)
    if kind is OutcomeKind.BLOCKED:
        raise Blocked(outcome)
    if kind is OutcomeKind.PENDING:
        raise StillPending(outcome)
    raise Denied(outcome)
