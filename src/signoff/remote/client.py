"""``signoff.remote``: the gate over HTTP, for Python agents and scripts on other machines.

    client = Client("http://127.0.0.1:8765", token=agent_token)
    outcome = client.run("execute", {"command": "make build"}, fn=run_command,
                         call_id="call_1", thread_id="t1")

``run`` does what an in-process ``Gate.run`` does, over the wire: propose;
if allowed, run now; if pending, long-poll for the decision; when approved,
claim (the server re-validates and hands back exactly the approved — maybe
edited — arguments and a fencing token), run those, report the result. A
rejection comes back as data (``reason``, ``alternatives``). Errors arrive as
the same ``SignoffError`` subclasses, with the same codes, as in-process.

A ``Client`` is also a gate for adapters (``signoff.kernel.protocol.GateProtocol``):
``propose(ToolCall, RunContext)``, ``outcome``, ``wait``, ``claim``, ``report``,
``cancel(…, actor=, reason=)`` and the thread reads answer with the in-process
``Gate``'s types, so ``SignoffMiddleware(client)`` gates an agent on a remote server.
On the approver's side, ``approve_many`` answers as ``Gate.approve_many`` does (a
``BulkResult``, the same typed errors), the token standing for its ``identity=``.
The server fixes each run's review mode and interaction mode itself (trusted context
never crosses the wire), and the adapter's own checks read ``policy=``, the policy
the server runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload
from urllib.parse import quote

import httpx

from signoff import errors, inputs
from signoff.canonical import canonical_text, parse_args
from signoff.kernel.bulk import BulkResult
from signoff.kernel.execution import Execution
from signoff.kernel.outcomes import Outcome, OutcomeKind, Proposal, ProposalKind
from signoff.model import ApprovalRequest, ReviewMode, RunContext, ToolCall
from signoff.policy import Policy, PolicyConfig
from signoff.remote.wire import bulk_result_of, outcome_of, request_of, verdict_of
from signoff.store.thread_memory import ThreadMemory

_BY_STATUS: dict[int, type[errors.SignoffError]] = {
    400: errors.ConfigurationError, 401: errors.Unauthenticated, 403: errors.Forbidden,
    404: errors.NotFound, 409: errors.Conflict, 410: errors.Expired,
    422: errors.InvalidDecision, 503: errors.StoreError}
_ARG_CODES = {"invalid_json", "not_an_object", "duplicate_key", "non_finite_number",
              "lone_surrogate", "too_deep", "too_large", "integer_out_of_range"}
LONG_POLL = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CallAnswer:
    """The server's answer to a proposal."""

    status: str  # allowed | denied | blocked | pending | decided
    request_id: str | None
    verdict: Mapping[str, Any] = field(default_factory=dict)
    stripped: tuple[str, ...] = ()


_UNSET: Any = object()


class Client:
    def __init__(self, base_url: str, token: str, *, timeout: float = 10.0,
                 transport: httpx.BaseTransport | None = None,
                 policy: Policy | None = None) -> None:
        """``policy``: the policy the server runs, for an adapter's checks before it
        proposes (``SignoffMiddleware``); the server judges every call by its own."""
        self.http = httpx.Client(base_url=base_url.rstrip("/"), transport=transport,
                                 headers={"Authorization": f"Bearer {token}"},
                                 timeout=httpx.Timeout(timeout, read=LONG_POLL + timeout))
        self._policy = policy
        self._on_close: list[Callable[[], None]] = []

    @property
    def policy(self) -> Policy:
        if self._policy is None:
            raise errors.ConfigurationError(
                "this Client was made without policy=: an adapter needs the policy the "
                "server runs (Policy.load of the same signoff.toml)", code="no_policy")
        return self._policy

    @property
    def config(self) -> PolicyConfig:
        return self.policy.config

    def close(self) -> None:
        self.http.close()
        hooks, self._on_close = self._on_close, []
        for hook in hooks:
            hook()

    def on_close(self, hook: Callable[[], None]) -> None:
        self._on_close.append(hook)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ---- the agent's side ---------------------------------------------------------------------

    @overload
    def propose(self, tool: str, args: Mapping[str, Any] | None = None, *, call_id: str,
                thread_id: str | None = None, run_id: str | None = None,
                session_id: str | None = None, description: str | None = None,
                evidence: Sequence[str] = ()) -> CallAnswer: ...

    @overload
    def propose(self, tool: ToolCall, context: RunContext | None = None, *,
                evidence: Sequence[str] = ()) -> Proposal: ...

    def propose(self, tool: str | ToolCall, *given: Any, **named: Any) -> CallAnswer | Proposal:
        """``propose(tool, args, call_id=…)``: the server's answer as it sent it;
        ``propose(ToolCall, RunContext)``: a ``Proposal``, as ``Gate.propose`` returns."""
        if isinstance(tool, ToolCall):
            context = given[0] if given else named.pop("context", None)
            return self._propose_call(tool, context or RunContext(), **named)
        return self._propose_tool(tool, *given, **named)

    def _propose_tool(self, tool: str, args: Mapping[str, Any] | None = None, *,
                      call_id: str, thread_id: str | None = None, run_id: str | None = None,
                      session_id: str | None = None, description: str | None = None,
                      evidence: Sequence[str] = ()) -> CallAnswer:
        data = self._post_call(tool, args, call_id, description=description,
                               evidence=evidence, context={
            "thread_id": thread_id, "run_id": run_id, "session_id": session_id})
        return CallAnswer(status=data["status"], request_id=data.get("request_id"),
                          verdict=data.get("verdict", {}), stripped=tuple(data["stripped"]))

    def _post_call(self, tool: str, args: Mapping[str, Any] | None, call_id: str, *,
                   description: str | None, evidence: Sequence[str],
                   context: Mapping[str, str | None]) -> dict[str, Any]:
        body = {"tool": tool, "args": dict(args or {}), "call_id": call_id,
                "description": description, "evidence": list(evidence),
                "context": {k: v for k, v in context.items() if v is not None}}
        return self._call("POST", "/api/v1/calls", json=body)

    def _propose_call(self, call: ToolCall, context: RunContext, *,
                      evidence: Sequence[str] = ()) -> Proposal:
        args = call.args if isinstance(call.args, Mapping) else parse_args(call.args)
        # The run's interaction mode and parent call cross the wire as claims the server
        # honours only where they restrict (``signoff.policy.modes.CLAIMABLE_KEYS``).
        interaction = context.interaction_mode
        data = self._post_call(call.name, args, call.id or "", description=call.description,
                               evidence=evidence, context={
            "thread_id": context.thread_id, "run_id": context.run_id,
            "session_id": context.session_id, "intent": context.intent,
            "parent_call": context.parent_call,
            "interaction_mode": interaction.value if interaction.unattended else None})
        request_id = data.get("request_id")
        return Proposal(kind=ProposalKind(data["status"]),
                        verdict=verdict_of(data["verdict"], call),
                        request=self.get_request(request_id) if request_id else None)

    def propose_now(self, call: ToolCall, context: RunContext | None = None) -> Proposal | None:
        """Always ``None``: only the server judges a call, so there is no answer without
        asking it (``propose``)."""
        return None

    def outcome(self, request_id: str, *, wait: float = 0.0) -> Outcome:
        data = self._call("GET", f"/api/v1/calls/{_segment(request_id)}", params={"wait": wait})
        return outcome_of(data)

    def wait(self, request_id: str, *, timeout: float = 3600.0) -> Outcome:
        """Long-poll until the request is decided or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            outcome = self.outcome(request_id, wait=max(0.0, min(LONG_POLL, remaining)))
            if outcome.kind is not OutcomeKind.PENDING or remaining <= 0:
                return outcome

    def claim(self, request_id: str) -> Execution | Outcome:
        """The ``Execution`` to run, or — as ``Gate.claim`` — the ``Outcome`` that says why
        the request cannot be claimed (decided otherwise, invalidated, held by another)."""
        try:
            data = self._call("POST", f"/api/v1/calls/{_segment(request_id)}/claim")
        except errors.Conflict as exc:
            if exc.status is None:  # not the request's state: contention, say
                raise
            return self.outcome(request_id)
        return Execution(data["request_id"], int(data["fencing_token"]), dict(data["args"]),
                         receipt=data.get("receipt"))

    def receipt(self, request_id: str) -> str:
        """The signed receipt of a request's approval (``signoff.receipts.verify`` checks
        it); ``NotFound(receipt_unavailable)`` if none was signed."""
        data = self._call("GET", f"/api/v1/requests/{_segment(request_id)}/receipt")
        return str(data["receipt"])

    def jwks(self) -> dict[str, Any]:
        """The server's public keys (``/.well-known/jwks.json``), to verify receipts with."""
        return dict(self._call("GET", "/.well-known/jwks.json"))

    def report(self, execution: Execution, *, result: Any = None,
               error: str | None = None) -> Outcome:
        self._call("POST", f"/api/v1/calls/{_segment(execution.request_id)}/result",
                   json={"fencing_token": execution.fencing_token, "result": result,
                         "error": error})
        return self.outcome(execution.request_id)

    def run(self, tool: str, args: Mapping[str, Any] | None, *, fn: Callable[..., Any],
            call_id: str, thread_id: str | None = None, run_id: str | None = None,
            description: str | None = None, timeout: float = 3600.0) -> Outcome:
        """Propose, wait, claim, run ``fn(**approved_args)``, report: the whole gate."""
        answer = self.propose(tool, args, call_id=call_id, thread_id=thread_id, run_id=run_id,
                              description=description)
        if answer.status == "allowed":
            return _run_now(fn, dict(args or {}))
        if answer.status in ("denied", "blocked"):
            verdict = answer.verdict
            return Outcome(kind=OutcomeKind(answer.status), code=verdict.get("code"),
                           message=verdict.get("message"))
        assert answer.request_id is not None
        outcome = self.wait(answer.request_id, timeout=timeout)
        if outcome.kind is not OutcomeKind.APPROVED:
            return outcome
        try:
            execution = self.claim(answer.request_id)
        except errors.Conflict:
            return self.outcome(answer.request_id)
        if isinstance(execution, Outcome):
            return execution
        try:
            result = fn(**execution.args)
        except Exception as exc:
            return self.report(execution, error=f"{type(exc).__name__}: {exc}")
        return self.report(execution, result=result)

    # ---- the approver's side ------------------------------------------------------------------

    def requests(self, *, status: str | None = None, thread_id: str | None = None,
                 limit: int = 100) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"limit": limit}
        if status:
            params["status"] = status
        if thread_id:
            params["thread_id"] = thread_id
        found: list[dict[str, Any]] = self._call("GET", "/api/v1/requests",
                                                 params=params)["requests"]
        return list(found)

    def request(self, request_id: str) -> dict[str, Any]:
        return self._call("GET", f"/api/v1/requests/{_segment(request_id)}")

    def decide(self, request_id: str, kind: str, *, reason: str | None = None,
               alternatives: Sequence[str] = (), args: Mapping[str, Any] | None = None,
               message: str | None = None, scope: str = "once",
               idempotency_key: str | None = None,
               expected_args_hash: str | None = None,
               listed: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
        """``expected_args_hash``: the arguments hash the approver was shown; the decision
        is refused (``args_changed``, 409) if other arguments would run now. ``listed``
        (``scope="auto_thread"``): the other calls of the pause the approver was shown, as
        (request id, arguments hash); only those are approved with it."""
        body: dict[str, Any] = {"kind": kind, "scope": scope, "reason": reason,
                                "alternatives": list(alternatives), "message": message}
        if args is not None:
            body["args"] = dict(args)
        if expected_args_hash is not None:
            body["expected_args_hash"] = expected_args_hash
        if listed:
            body["listed"] = [{"request_id": i, "args_hash": h} for i, h in listed]
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._call("POST", f"/api/v1/requests/{_segment(request_id)}/decisions",
                          json=body, headers=headers)

    def approve_many(self, listed: Sequence[tuple[str, str]]) -> BulkResult:
        """``Gate.approve_many`` over HTTP, as the identity holding this client's token (the
        gate's ``identity=``): approve once each listed (request id, arguments hash shown),
        each by its own decision bound to that hash. The same ``BulkResult``, each decision
        with its request as that decision left it; the same errors for the whole listing,
        nothing written: ``InvalidInput`` (``nothing_listed``, ``too_many_listed``,
        ``duplicate_listed``, ``invalid_args_hash``, ``invalid_identifier``), ``Forbidden``
        (``agent_cannot_decide``), ``InvalidDecision`` (``mixed_shapes``). What was refused
        call by call is in the result (``refused``, with codes)."""
        body = {"calls": [{"request_id": request_id, "args_hash": shown}
                          for request_id, shown in listed]}
        return bulk_result_of(self._call("POST", "/api/v1/requests/bulk-decisions",
                                         json=body))

    @overload
    def cancel(self, request_id: str, reason: str) -> dict[str, Any]: ...

    @overload
    def cancel(self, request_id: str, *, actor: str | None, reason: str) -> Outcome: ...

    def cancel(self, request_id: str, reason: str | None = None, *,
               actor: str | None = _UNSET) -> dict[str, Any] | Outcome:
        """Withdraw a request this identity asked for (an admin: any); the waiting agent
        reads ``reason``. Returns the cancelled request; with ``actor=`` (as
        ``Gate.cancel``; the server takes this client's identity as the actor), its
        ``Outcome``."""
        assert reason is not None
        if actor is not _UNSET:
            return self._withdraw(request_id, reason)
        return self._call("POST", f"/api/v1/requests/{_segment(request_id)}/cancel",
                          json={"reason": reason})

    def _withdraw(self, request_id: str, reason: str) -> Outcome:
        """``Gate.cancel``: a pending request is cancelled; one decided meanwhile keeps its
        decision, and the outcome says which (``pending_only``: the server cancels it only
        while it is pending, in the same transaction that reads it)."""
        with contextlib.suppress(errors.Conflict):  # decided first: the outcome says
            self._call("POST", f"/api/v1/requests/{_segment(request_id)}/cancel",
                       json={"reason": reason, "pending_only": True})
        return self.outcome(request_id)

    # ---- a gate's reads, for adapters (``signoff.kernel.protocol``) --------------------------

    def start_run(self, context: RunContext) -> RunContext:
        """``Gate.start_run`` from the thread as the server shows it: ``thread_waiting``
        while another run's request of this identity waits on it; the review mode the
        thread's calls get. (The server fixes both again at each proposal.)"""
        if context.thread_id and not context.parent_call:
            waiting = [r for r in self.pending_on_thread(context.thread_id)
                       if r.run_id != context.run_id]
            if waiting:
                raise errors.Conflict(
                    f"thread {context.thread_id} is waiting for {len(waiting)} decision(s) "
                    f"({waiting[0].id}); resolve them first", code="thread_waiting")
        return self.context_for(context)

    def context_for(self, context: RunContext | None) -> RunContext:
        context = context or RunContext()
        if context.review_mode is not None:
            return context
        if context.thread_id:
            mode = ReviewMode(self.thread(context.thread_id)["review_mode"])
        else:
            mode = self.policy.config.default_review_mode
        return dataclasses.replace(context, review_mode=mode)

    def get_request(self, request_id: str) -> ApprovalRequest:
        """The request as an ``ApprovalRequest`` (``request`` gives the JSON as sent)."""
        return request_of(self.request(request_id))

    store_get = get_request  # the older name

    def thread_memory(self, thread_id: str, *, fresh: bool = False) -> ThreadMemory:
        """The thread as the server shows this identity: its stored mode and who set it,
        and the requests pending on it (this identity's own, for an agent). Rejections,
        grants and when the mode was set stay the server's."""
        view = self.thread(thread_id)
        pending = tuple((str(r["id"]), r.get("run_id")) for r in view["pending"])
        return ThreadMemory(mode=view["review_mode"] if view["stored"] else None,
                            rejected=frozenset(), grants=(), pending=pending,
                            mode_by=view.get("set_by"))

    def pending_on_thread(self, thread_id: str) -> list[ApprovalRequest]:
        return self.thread_requests(thread_id, status="pending")

    def thread_requests(self, thread_id: str, *, limit: int = 500,
                        status: str | None = None) -> list[ApprovalRequest]:
        return [request_of(r) for r in self.requests(status=status, thread_id=thread_id,
                                                     limit=limit)]

    def thread(self, thread_id: str) -> dict[str, Any]:
        return self._call("GET", f"/api/v1/threads/{_segment(thread_id)}")

    def set_mode(self, thread_id: str, mode: str) -> dict[str, Any]:
        return self._call("PUT", f"/api/v1/threads/{_segment(thread_id)}",
                          json={"review_mode": mode})

    def check(self, tool: str, args: Mapping[str, Any] | None = None, *,
              thread_id: str | None = None) -> dict[str, Any]:
        context = {"thread_id": thread_id} if thread_id else {}
        return self._call("POST", "/api/v1/check",
                          json={"tool": tool, "args": dict(args or {}), "context": context})

    def audit(self, *, after: int = 0, limit: int = 100, verify: bool = False) -> dict[str, Any]:
        return self._call("GET", "/api/v1/audit",
                          params={"after": after, "limit": limit, "verify": verify})

    # ---- plumbing -----------------------------------------------------------------------------

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise errors.StoreError(f"signoff server unreachable: {exc}",
                                    code="server_unreachable") from exc
        if response.status_code >= 400:
            raise problem_error(response)
        data: dict[str, Any] = response.json()
        return data


def problem_error(response: httpx.Response) -> errors.SignoffError:
    """The ``SignoffError`` a problem+json answer stands for, code and all."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    code = str(body.get("code") or "http_error")
    detail = str(body.get("detail") or response.reason_phrase)
    if response.status_code == 422 and code in _ARG_CODES:
        return errors.InvalidArguments(detail, code=code)
    if response.status_code == 422 and (code in inputs.CODES or "field" in body):
        return errors.InvalidInput(detail, code=code, field=body.get("field"))
    kind = _BY_STATUS.get(response.status_code, errors.SignoffError)
    if code == "args_changed" and isinstance(body.get("args"), dict):
        # what would run now, to show whoever decided on a view of other arguments
        return errors.ArgsChanged(detail, args_hash=str(body.get("args_hash")),
                                  args=canonical_text(body["args"]))
    if kind is errors.Conflict:
        return errors.Conflict(detail, code=code, status=body.get("request_status"))
    return kind(detail, code=code)


def _run_now(fn: Callable[..., Any], args: dict[str, Any]) -> Outcome:
    try:
        return Outcome(kind=OutcomeKind.EXECUTED, result=fn(**args))
    except Exception as exc:
        return Outcome(kind=OutcomeKind.FAILED, error=f"{type(exc).__name__}: {exc}")


def _segment(value: str) -> str:
    """An id as one path segment: a thread id such as ``org/repo#12`` must reach the server
    whole, not as a path and a fragment."""
    return quote(value, safe="")
