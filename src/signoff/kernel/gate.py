"""``Gate``: where an agent's tool call meets the policy, the humans and the store.

    gate = Gate(Policy.load("signoff.toml"), SqliteStore("signoff.db"))
    @gate.tool()
    def write_file(path: str, content: str) -> int: ...

    write_file(path="notes.txt", content="hi")   # allowed → runs; ask → waits for a human

Faces: ``check`` (the verdict), ``propose`` (allowed / denied / blocked / pending with its
request), ``decide``, ``resume`` (running an approved request once), ``run`` (propose, wait,
resume), and their async twins. A façade over parts (``Proposer``, ``Decider``, …), each
given only what it needs; every method hands its call to one (``gate.passkeys`` is direct).
"""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from signoff.audit import AuditEvent, Verification
from signoff.identity import Account, Identity, IdentityKind, Session
from signoff.insights import Insights
from signoff.kernel.accounts import Accounts
from signoff.kernel.auditing import Trust
from signoff.kernel.bulk import BulkDecider, BulkResult, Shape, shape_of
from signoff.kernel.cancelling import Canceller
from signoff.kernel.deciding import Decider, DecisionResult
from signoff.kernel.execution import Execution, Executor
from signoff.kernel.hooks import Hooks
from signoff.kernel.once import Once, OnceDecider
from signoff.kernel.outcomes import Outcome, Proposal
from signoff.kernel.passkeys import Passkeys
from signoff.kernel.proposing import Proposer
from signoff.kernel.reading import Reader
from signoff.kernel.receipts import Receipts
from signoff.kernel.records import Records
from signoff.kernel.recovery import Recoverer, RecoveryReport, worker_id
from signoff.kernel.running import Runner
from signoff.kernel.sessions import DEFAULT_LIMITS, LINK_TTL, SessionLimits, SignIn
from signoff.kernel.signing import Signing
from signoff.kernel.tools import Precondition, ToolEntry, Verify
from signoff.kernel.verdicts import VerdictLog
from signoff.kernel.webhooks import Webhooks
from signoff.kernel.wrapping import registered
from signoff.kernel.written_requests import WrittenRequests
from signoff.model import (
    ApprovalRequest,
    Decision,
    DecisionRecord,
    RequestStatus,
    ReviewMode,
    RunContext,
    ToolCall,
    Verdict,
)
from signoff.policy import Policy, PolicyConfig
from signoff.policy.guarded import guard_files, guard_policies, guard_store
from signoff.policy.hints import ToolHints
from signoff.store.base import Approvals, Store
from signoff.store.deliveries import Delivery, StoredEndpoint
from signoff.store.pages import RequestQuery

if TYPE_CHECKING:
    from signoff.keys import SigningKey
    from signoff.store.thread_memory import ThreadMemory

P = ParamSpec("P")
R = TypeVar("R")
DEFAULT_WAIT = 3600.0


class Gate:
    """The kernel's one face: every public method delegates to the part that does it."""

    policy: Policy  # the loaded policy, its store's files guarded (set in __init__)

    def __init__(self, policy: Policy, store: Store, *, agent: str | None = "agent",
                 clock: Callable[[], float] = time.time, lease: float = 300.0,
                 hooks: Hooks | None = None, executor_id: str | None = None,
                 verdict_audit: str = "batched", signing_key: SigningKey | None = None,
                 issuer: str = "signoff") -> None:
        self.store = store
        # Allowed / denied / blocked verdicts change nothing: their audit events are batched
        # (signoff.kernel.verdicts) unless "sync" is asked for.
        self.verdicts = VerdictLog.chosen(store, verdict_audit)
        # The store's database file (and its journals) is protected from the agents judged
        # here, found from the store itself, whatever it is called (policy/guarded.py).
        config = guard_store(policy.config, store)
        self.policy = Policy(config, memory=store, reviewer=policy.reviewer, clock=clock,
                             hints=policy.hints)
        self.revalidation_policy = Policy(config, reviewer=policy.reviewer, clock=clock,
                                          hints=policy.hints)
        # Files protected since (``protect_files``): protected again in a reloaded policy.
        self._protected: list[tuple[tuple[str, ...], str, bool]] = []
        self.hooks = hooks or Hooks()
        self.tools: dict[str, ToolEntry] = {}
        self.written = WrittenRequests()  # the requests proposed here, as written here
        self.executor_id = executor_id or f"{socket.gethostname()}:{os.getpid()}"
        # Names this worker on the child requests it waits on (``recover`` withdraws the
        # waits of a worker that died or restarted): host, pid and a per-process boot id.
        self.worker_id = worker_id()
        self.lease = lease
        # The parts, each given what it needs; ``clock`` and ``agent`` are set on them all.
        self.reader = Reader(store, clock=clock)
        self.signing = Signing(store, signing_key, clock=clock)  # receipts, checkpoints
        self.receipts = Receipts(store, self.signing, issuer=issuer)  # iss: the deployment
        self.proposer = Proposer(store, self.policy, tools=self.tools, verdicts=self.verdicts,
                                 written=self.written, hooks=self.hooks, clock=clock, agent=agent,
                                 worker_id=self.worker_id)
        self.passkeys = Passkeys(store, clock=clock, signing=self.signing)  # approvers' passkeys
        self.decider = Decider(store, self.policy, tools=self.tools, written=self.written,
                               hooks=self.hooks, clock=clock,
                               inbox_url=self.passkeys.where, receipts=self.receipts)
        self.executor = Executor(store, self.reader, revalidation_policy=self.revalidation_policy,
                                 tools=self.tools, lease=lease, executor_id=self.executor_id,
                                 hooks=self.hooks, clock=clock)
        self.recoverer = Recoverer(store, self.executor, tools=self.tools, clock=clock,
                                   worker_id=self.worker_id)
        self.once = OnceDecider(self.decider)
        self.bulk = BulkDecider(store, self.decider, config)
        self.canceller = Canceller(store, clock=clock, agent=agent)
        self.accounts = Accounts(store, self.policy, clock=clock)
        self.signin = SignIn(store, clock=clock, authenticate=self.accounts.authenticate)
        self.webhooks = Webhooks(store)
        self.records = Records(store, verdicts=self.verdicts, clock=clock)
        self.runner = Runner(store, self.proposer, self.reader, self.executor, tools=self.tools)
        self._clock, self._agent = clock, agent

    @property
    def clock(self) -> Callable[[], float]:  # what every part judges time by
        return self._clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        for part in (self.reader, self.records, self.proposer, self.decider, self.executor,
                     self.recoverer, self.canceller, self.accounts, self.signin, self.passkeys,
                     self.signing):
            part.clock = clock

    @property
    def config(self) -> PolicyConfig:  # the policy configuration this gate judges by
        return self.policy.config

    @property
    def backend(self) -> str:  # the store's kind: ``sqlite`` or ``postgres``
        return self.store.backend

    @property
    def agent(self) -> str | None:  # the agent proposed for when a call's context names none
        return self._agent

    @agent.setter
    def agent(self, agent: str | None) -> None:
        self._agent = agent
        self.proposer.agent = self.canceller.agent = agent

    # ---- proposing (signoff.kernel.proposing) ---------------------------------------------------

    def context_for(self, context: RunContext | None) -> RunContext:
        return self.proposer.context_for(context)

    def check(self, call: ToolCall, context: RunContext | None = None) -> Verdict:
        return self.proposer.check(call, context)

    def propose_now(self, call: ToolCall, context: RunContext | None = None) -> Proposal | None:
        return self.proposer.propose_now(call, context)

    def propose(self, call: ToolCall, context: RunContext | None = None, *,
                evidence: Sequence[str] = (), agent: str | None = None) -> Proposal:
        """``agent``: the agent this call is proposed for, when not the gate's own (a
        server judging a coding agent's hook names the harness)."""
        return self.proposer.propose(call, context, evidence=evidence, agent=agent)

    def start_run(self, context: RunContext) -> RunContext:
        return self.proposer.start_run(context)

    # ---- deciding (signoff.kernel.deciding) and cancelling (signoff.kernel.cancelling) ---------

    def decide(self, request_id: str, decision: Decision, *, identity: Identity,
               idempotency_key: str | None = None, via: str | None = None) -> DecisionResult:
        return self.decider.decide(request_id, decision, identity=identity,
                                   idempotency_key=idempotency_key, via=via)

    def decide_once(self, request_id: str, decision: Decision, *, user: str, key: str,
                    via: str, precheck: Callable[[], None] | None = None) -> Once:
        return self.once.decide_once(request_id, decision, user=user, key=key, via=via,
                                     precheck=precheck)

    def approve_many(self, listed: Sequence[tuple[str, str]], *,
                     identity: Identity) -> BulkResult:
        """Approve once each listed (request id, arguments hash shown), each its own
        decision (signoff.kernel.bulk)."""
        return self.bulk.approve_many(listed, identity=identity)

    def shape_of(self, request: ApprovalRequest) -> Shape:
        """What calls approved together share: tool, argument names, commands."""
        return shape_of(request, self.policy.config)

    def withdraw(self, request_id: str, *, identity: Identity, reason: str,
                 pending_only: bool = False) -> ApprovalRequest:
        return self.canceller.withdraw(request_id, identity=identity, reason=reason,
                                       pending_only=pending_only)

    def cancel(self, request_id: str, *, actor: str | None, reason: str) -> Outcome:
        return self.canceller.cancel(request_id, actor=actor, reason=reason)

    # ---- reading and waiting (signoff.kernel.reading) -------------------------------------------

    def request(self, request_id: str) -> ApprovalRequest:
        """The request as stored, or ``NotFound``."""
        return self.reader.get(request_id)

    def get_request(self, request_id: str) -> ApprovalRequest:  # the protocol's name for it
        return self.reader.get(request_id)

    store_get = get_request  # the older name, kept for callers written against it

    def outcome(self, request_id: str) -> Outcome:
        """The outcome now, running nothing (an overdue pending request expires first)."""
        return self.reader.outcome(request_id)

    def wait(self, request_id: str, *, timeout: float = DEFAULT_WAIT) -> Outcome:
        return self.reader.wait(request_id, timeout=timeout)

    # ---- executing (signoff.kernel.execution) and recovering (signoff.kernel.recovery) ----------

    def claim(self, request_id: str, *, executor: str | None = None,
              request: ApprovalRequest | None = None,
              approvals: Approvals | None = None) -> Execution | Outcome:
        return self.receipts.attach(self.executor.claim(  # with the approval's receipt
            request_id, executor=executor, request=request, approvals=approvals))

    def heartbeat(self, execution: Execution, *, seconds: float | None = None) -> bool:
        return self.executor.heartbeat(execution, seconds=seconds)

    def report(self, execution: Execution, *, result: Any = None,
               error: str | None = None, actor: str | None = None) -> Outcome:
        return self.executor.report(execution, result=result, error=error, actor=actor)

    def abandon(self, execution: Execution, *, reason: str, actor: str | None = None) -> Outcome:
        return self.executor.abandon(execution, reason=reason, actor=actor)

    def execute(self, request_id: str, *, request: ApprovalRequest | None = None,
                approvals: Approvals | None = None) -> Outcome:
        return self.executor.execute(request_id, request=request, approvals=approvals)

    def work(self, *, limit: int | None = None) -> int:
        return self.executor.work(limit=limit)

    def recover(self, *, run_approved: bool = True) -> RecoveryReport:
        return self.recoverer.recover(run_approved=run_approved)

    def settle(self, request_id: str, *, succeeded: bool, actor: str, note: str) -> bool:
        return self.recoverer.settle(request_id, succeeded=succeeded, actor=actor, note=note)

    # ---- running a call end to end (signoff.kernel.running) -------------------------------------

    def resume(self, request_id: str) -> Outcome:
        return self.runner.resume(request_id)

    def run(self, call: ToolCall, context: RunContext | None = None, *,
            timeout: float = DEFAULT_WAIT, fn: Callable[..., Any] | None = None) -> Outcome:
        return self.runner.run(call, context, timeout=timeout, fn=fn)

    # ---- users, modes and sessions (signoff.kernel.accounts, signoff.kernel.sessions) ---------

    def add_user(self, name: str, *, roles: Sequence[str] = (),
                 kind: IdentityKind | str = IdentityKind.APPROVER,
                 expires_in: float | None = None,
                 actor: str | None = None) -> tuple[Identity, str]:
        return self.accounts.add_user(name, roles=roles, kind=kind, expires_in=expires_in,
                                      actor=actor)

    def set_roles(self, name: str, roles: Sequence[str], *, actor: str | None = None) -> Account:
        return self.accounts.set_roles(name, roles, actor=actor)

    def disable_user(self, name: str, *, actor: str | None = None) -> tuple[Account, bool]:
        return self.accounts.disable_user(name, actor=actor)

    def enable_user(self, name: str, *, actor: str | None = None) -> tuple[Account, bool]:
        return self.accounts.enable_user(name, actor=actor)

    def remove_user(self, name: str, *, actor: str | None = None) -> Account:
        return self.accounts.remove_user(name, actor=actor)

    def rotate_token(self, name: str, *, expires_in: float | None = None,
                     actor: str | None = None) -> tuple[Account, str]:
        return self.accounts.rotate_token(name, expires_in=expires_in, actor=actor)

    def users(self, *, removed: bool = False) -> list[Account]:
        return self.accounts.users(removed=removed)

    def user(self, name: str) -> Account:
        return self.accounts.user(name)

    def remembered_identity(self, token: str | None) -> Identity | None:
        return self.accounts.remembered_identity(token)

    def authenticate(self, token: str | None) -> Identity:
        return self.accounts.authenticate(token)

    def set_thread_mode(self, thread_id: str, mode: ReviewMode | str, *,
                        actor: str | None = None) -> ReviewMode:
        return self.accounts.set_thread_mode(thread_id, mode, actor=actor)

    def mint_login_link(self, name: str, *, ttl: float = LINK_TTL,
                        actor: str | None = None) -> tuple[str, float]:
        return self.signin.mint_login_link(name, ttl=ttl, actor=actor)

    def redeem_login_link(self, code: str, *,
                          limits: SessionLimits = DEFAULT_LIMITS) -> tuple[str, Session]:
        return self.signin.redeem_login_link(code, limits=limits)

    def sign_in(self, token: str, *,
                limits: SessionLimits = DEFAULT_LIMITS) -> tuple[str, Session]:
        return self.signin.sign_in(token, limits=limits)

    def session_identity(self, secret: str, *, touch: bool = True) -> tuple[Identity, Session]:
        return self.signin.session_identity(secret, touch=touch)

    def end_session(self, secret: str) -> Session | None:
        return self.signin.end_session(secret)

    def revoke_sessions(self, name: str, *, session_id: str | None = None,
                        actor: str | None = None) -> list[Session]:
        return self.signin.revoke_sessions(name, session_id=session_id, actor=actor)

    def sessions(self, name: str) -> list[Session]:
        return self.signin.sessions(name)

    # ---- what the layers above read, and the records they keep (signoff.kernel.records) ----------

    def find_request(self, request_id: str) -> ApprovalRequest | None:
        return self.records.find_request(request_id)

    def list_requests(self, *, status: RequestStatus | None = None,
                      thread_id: str | None = None, limit: int = 100,
                      query: RequestQuery | None = None,
                      after: tuple[float, str] | None = None) -> list[ApprovalRequest]:
        return self.records.list_requests(status=status, thread_id=thread_id, limit=limit,
                                          query=query, after=after)

    def decisions(self, request_id: str) -> list[DecisionRecord]:
        return self.records.decisions(request_id)

    def thread_memory(self, thread_id: str, *, fresh: bool = False) -> ThreadMemory:
        return self.records.thread_memory(thread_id, fresh=fresh)

    def pending_on_thread(self, thread_id: str) -> list[ApprovalRequest]:
        return self.records.pending_on_thread(thread_id)

    def thread_requests(self, thread_id: str, *, limit: int = 500) -> list[ApprovalRequest]:
        return self.records.thread_requests(thread_id, limit=limit)

    def on_close(self, hook: Callable[[], None]) -> None:  # run ``hook`` when the store closes
        self.store.on_close(hook)

    def thread_parties(self, thread_id: str) -> frozenset[str]:
        return self.records.thread_parties(thread_id)

    def audit_events(self, *, after: int = 0, limit: int | None = None,
                     seal: bool = True) -> Iterator[AuditEvent]:
        return self.records.audit_events(after=after, limit=limit, seal=seal)

    def audit_head(self) -> tuple[int, str]:
        return self.records.audit_head()

    def verify_audit(self, trust: Trust | None = None) -> Verification:
        return self.records.verify_audit(trust)  # the chain, signed checkpoints (auditing.py)

    def count_users(self) -> int:
        return self.records.count_users()

    def insights(self, *, since: float | None = None, until: float | None = None,
                 top: int = 20) -> Insights:  # the history's figures (docs/insights.md)
        return self.records.insights(since=since, until=until, top=top,
                                     rules=[rule.id for rule in self.config.rules])

    def live_sessions(self) -> dict[str, list[Session]]:
        return self.records.live_sessions()

    def identity_of(self, name: str) -> Identity | None:
        return self.records.identity_of(name)

    def deliveries(self, *, channel: str | None = None, status: str | None = None,
                   request_id: str | None = None, before_index: int | None = None,
                   limit: int = 100) -> list[Delivery]:
        return self.records.deliveries(channel=channel, status=status, request_id=request_id,
                                       before_index=before_index, limit=limit)

    def note_call_result(self, data: Mapping[str, Any], *, actor: str | None) -> None:
        self.records.note_call_result(data, actor=actor)

    def note_shown(self, key: str, *, request_id: str, args_hash: str) -> None:
        self.records.note_shown(key, request_id=request_id, args_hash=args_hash)

    def shown(self, key: str, request_id: str) -> tuple[str | None, ApprovalRequest | None]:
        return self.records.shown(key, request_id)

    def first_use_of_signature(self, signature: str, *, at: float, keep: float) -> bool:
        return self.records.first_use_of_signature(signature, at=at, keep=keep)

    def note_refused(self, request_id: str, decision: Decision, *, code: str, via: str,
                     actor: str | None, data: Mapping[str, Any]) -> None:
        self.records.note_refused(request_id, decision, code=code, via=via, actor=actor,
                                  data=data)

    # ---- registered webhooks (signoff.kernel.webhooks; checked by notify.webhook_admin) -----

    def webhook_endpoints(self) -> list[StoredEndpoint]:
        return self.webhooks.webhook_endpoints()

    def add_webhook(self, endpoint: StoredEndpoint, *, data: Mapping[str, Any],
                    actor: str | None, now: float) -> None:
        self.webhooks.add_webhook(endpoint, data=data, actor=actor, now=now)

    def remove_webhook(self, name: str, *, actor: str | None, now: float) -> None:
        self.webhooks.remove_webhook(name, actor=actor, now=now)

    def replay_deliveries(self, *, actor: str | None, now: float, ids: Sequence[str],
                          channel: str | None, status: str | None,
                          after_index: int | None) -> list[str]:
        return self.webhooks.replay_deliveries(actor=actor, now=now, ids=ids, channel=channel,
                                               status=status, after_index=after_index)

    # ---- the policy's hints and guards, the verdict log, the store -----------------------------

    def add_hints(self, hints: Mapping[str, ToolHints | None]) -> None:
        """Tool annotations heard from an MCP server, to judge by (``None`` clears a tool's)."""
        self.policy.hints.update(hints)

    def protect_files(self, paths: Iterable[str | os.PathLike[str] | None], role: str, *,
                      secret: bool = False) -> None:
        """Protect files the running gate's configuration names (the server's ``[notify]``
        ``ca_file``, its signing key: ``secret``, reading it asks too)."""
        named = tuple(os.path.abspath(os.fspath(p)) for p in paths if p)
        self._protected.append((named, role, secret))
        guard_policies((self.policy, self.revalidation_policy), named, role, secret=secret)

    def reload_policy(self, config: PolicyConfig, *, actor: str | None,
                      data: Mapping[str, Any] | None = None) -> None:
        """Judge by ``config`` from now on: every part of the gate is handed the new policy
        at once (proposing, deciding, re-validating before a run, bulk approval, thread
        modes). What the gate protected stays protected (its store's files, the files
        ``protect_files`` named), its grants and rejections are still remembered, and its
        auto reviewer is kept unless ``[review]`` changed. A ``policy.changed`` audit event
        (``source``, ``from``, ``to``, and ``data``; ``actor``) is written first: when it
        cannot be, nothing changes. Requests approved under the old policy are re-checked
        under the new one before they run, as after any change (``policy_changed``)."""
        config = guard_store(config, self.store)
        for named, role, secret in self._protected:
            config = guard_files(config, named, role, secret=secret)
        old = self.policy
        reviewer = old.reviewer if config.review == old.config.review else None
        policy = Policy(config, memory=self.store, reviewer=reviewer, clock=self._clock,
                        hints=old.hints)
        revalidation = Policy(config, reviewer=policy.reviewer, clock=self._clock,
                              hints=old.hints)
        self.records.note_policy_changed({"source": config.source, "from": old.version,
                                          "to": config.version, **(data or {})}, actor=actor)
        self.policy = self.proposer.policy = self.decider.policy = self.accounts.policy = policy
        self.revalidation_policy = self.executor.revalidation_policy = revalidation
        self.bulk.config = config

    def jwks(self) -> dict[str, list[dict[str, Any]]]:
        return self.signing.jwks()

    def published_keys(self) -> list[dict[str, Any]]:
        return self.signing.published()

    def rotate_signing_key(self, successor: SigningKey, *, actor: str | None) -> str | None:
        return self.signing.rotate(successor, actor=actor)

    def receipt(self, request_id: str) -> str:
        return self.receipts.receipt(request_id)

    def notifier_tables(self) -> Store:
        """The store, for the notifier alone: it keeps tables of its own beside the gate's
        (the delivery log, its timers, Slack message ids) and writes them, with their events,
        in its own transactions. Nothing else above the kernel is handed the store."""
        return self.store

    def flush(self) -> None:
        """Write the batched verdict audit events now (see ``signoff.kernel.verdicts``)."""
        if self.verdicts is not None:
            self.verdicts.flush()

    def close(self) -> None:
        """Flush the verdict audit and close the store."""
        if self.verdicts is not None:
            self.verdicts.close()
        self.store.close()

    # ---- async faces: the same implementation ------------------------------------------------

    async def apropose(self, call: ToolCall, context: RunContext | None = None) -> Proposal:
        import asyncio  # noqa: PLC0415 (a sync caller never pays for it)

        return await asyncio.to_thread(self.propose, call, context)

    async def adecide(self, request_id: str, decision: Decision, *, identity: Identity,
                      idempotency_key: str | None = None) -> DecisionResult:
        import asyncio  # noqa: PLC0415 (a sync caller never pays for it)

        return await asyncio.to_thread(self.decide, request_id, decision, identity=identity,
                                       idempotency_key=idempotency_key)

    async def aresume(self, request_id: str) -> Outcome:
        return await self.runner.aresume(request_id)

    async def await_decision(self, request_id: str, *, timeout: float = DEFAULT_WAIT) -> Outcome:
        import asyncio  # noqa: PLC0415 (a sync caller never pays for it)

        return await asyncio.to_thread(self.wait, request_id, timeout=timeout)

    async def arun(self, call: ToolCall, context: RunContext | None = None, *,
                   timeout: float = DEFAULT_WAIT) -> Outcome:
        return await self.runner.arun(call, context, timeout=timeout)

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
        """Register a tool and wrap it so every call goes through the gate (the wrapper and
        what it raises when a call does not run: ``signoff.kernel.wrapping``)."""
        register = functools.partial(
            registered, self.tools, run=self.run, arun=self.arun, name=name, schema=schema,
            preconditions=preconditions, verify=verify, summary=summary,
            expected_effect=expected_effect, context=context, timeout=timeout)
        return register(fn) if fn is not None else register
