"""The JSON API under ``/api/v1`` (DESIGN §6): the gate over HTTP.

An agent in any language proposes with ``POST /calls``, long-polls
``GET /calls/{id}?wait=30`` for the outcome, and — when approved — claims the
exact approved arguments with ``POST /calls/{id}/claim`` and reports what the
tool did with ``POST /calls/{id}/result`` (the fencing token proves it still
holds the claim). Approvers list, read and decide requests. Every handler
does its database work in the thread pool; waiting never holds a thread.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response, StreamingResponse

from signoff import __version__
from signoff.canonical import parse_args
from signoff.errors import Conflict, Forbidden, InvalidArguments, SignoffError
from signoff.execution import Execution
from signoff.gate import Gate
from signoff.identity import Identity, IdentityKind
from signoff.model import (
    ApprovalRequest,
    Decision,
    DecisionKind,
    RequestStatus,
    ReviewMode,
    ToolCall,
)
from signoff.outcomes import OutcomeKind
from signoff.policy.modes import untrusted_context
from signoff.server import schemas
from signoff.server.auth import authenticate, require_decider
from signoff.server.events import event_stream
from signoff.server.problems import problem_schema
from signoff.server.state import state_of

M = TypeVar("M", bound=BaseModel)
MAX_BODY = (1 << 20) + 64 * 1024  # the arguments' limit plus room for the envelope
MAX_INDEX = 2**53 - 1  # audit indexes; beyond this a database integer would overflow
MODE_ORDER = (ReviewMode.MANUAL, ReviewMode.AUTO, ReviewMode.FULL)

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"description": text, "content": {"application/problem+json": {
        "schema": problem_schema()}}}
    for code, text in [(400, "bad input or Host"), (401, "no or unknown token"),
                       (403, "not allowed (role, self-approval, agent, CSRF, origin)"),
                       (404, "no such request"), (409, "state moved on (already decided, …)"),
                       (410, "the request expired"), (422, "malformed body or decision"),
                       (503, "database unavailable")]}

router = APIRouter(prefix="/api/v1", responses=_ERRORS)


def _body_doc(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": model.model_json_schema()}}}}


async def read_body(request: Request, model: type[M]) -> M:
    """Parse the body strictly (duplicate keys, NaN, lone surrogates, depth and size limits
    are errors with their own codes: the bytes hashed must be the bytes meant), then
    validate its shape."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise InvalidArguments(f"body exceeds {MAX_BODY} bytes", code="too_large")
    try:
        data = parse_args(raw)
    except InvalidArguments as exc:
        raise InvalidArguments(f"body: {exc.message}", code=exc.code) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors()) from None


def _request(req: ApprovalRequest) -> dict[str, Any]:
    data = req.to_dict()
    return {key: data[key] for key in schemas.Request.model_fields}


# ---- calls: the gate for agents -----------------------------------------------------------------

@router.post("/calls", response_model=schemas.CallOut, openapi_extra=_body_doc(schemas.CallIn),
             summary="Propose a tool call")
async def propose(request: Request) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    body = await read_body(request, schemas.CallIn)
    context, stripped = untrusted_context(body.context)
    context = _with_principal(context, identity)
    call = ToolCall(id=body.call_id, name=body.tool, args=body.args,
                    description=body.description)
    proposal = await run_in_threadpool(state.gate.propose, call, context,
                                       evidence=tuple(body.evidence))
    request_id = proposal.request_id
    state.metrics.proposals.labels(proposal.kind.value).inc()
    return {"status": proposal.kind.value, "request_id": request_id,
            "verdict": proposal.verdict.to_dict(), "stripped": list(stripped),
            "wait_url": f"/api/v1/calls/{request_id}?wait=30" if request_id else None}


def _with_principal(context: Any, identity: Identity) -> Any:
    from dataclasses import replace  # noqa: PLC0415

    return replace(context, principal=identity.name)


@router.get("/calls/{request_id}", response_model=schemas.Outcome,
            summary="The call's outcome; ?wait=SECONDS long-polls while it is pending")
async def call_outcome(request: Request, request_id: str,
                       wait: Annotated[float, Query(ge=0, le=3600)] = 0) -> Any:
    state = state_of(request)
    await authenticate(state.gate, request)
    deadline = time.monotonic() + min(wait, state.settings.long_poll_max)
    state.metrics.waiters.inc()
    try:
        while True:
            generation = state.feed.generation
            outcome = await run_in_threadpool(state.gate.outcome, request_id)
            remaining = deadline - time.monotonic()
            if outcome.kind is not OutcomeKind.PENDING or remaining <= 0:
                return outcome.to_dict()
            await state.feed.changed(generation, min(remaining, 5.0))
    finally:
        state.metrics.waiters.dec()


@router.post("/calls/{request_id}/claim", response_model=schemas.Claim,
             summary="Re-validate an approved call and claim it: run exactly the args returned")
async def claim(request: Request, request_id: str) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    current = await run_in_threadpool(state.gate.store_get, request_id)
    _may_run(current, identity)
    got = await run_in_threadpool(state.gate.claim, request_id, executor=identity.name)
    if isinstance(got, Execution):
        refreshed = await run_in_threadpool(state.gate.store_get, request_id)
        return {"request_id": got.request_id, "fencing_token": got.fencing_token,
                "args": got.args, "lease_until": refreshed.lease_until}
    code = got.code or f"request_{got.kind.value}"
    raise Conflict(f"request {request_id} cannot be claimed: {got.kind.value}"
                   + (f" ({got.reason})" if got.reason else ""), code=code,
                   status=got.kind.value)


@router.post("/calls/{request_id}/result", response_model=schemas.Outcome,
             openapi_extra=_body_doc(schemas.ResultIn),
             summary="Report what the claimed call did (holder of the fencing token only)")
async def report(request: Request, request_id: str) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    body = await read_body(request, schemas.ResultIn)
    current = await run_in_threadpool(state.gate.store_get, request_id)
    _may_run(current, identity)
    outcome = await run_in_threadpool(
        lambda: state.gate.report(Execution(request_id, body.fencing_token),
                                  result=body.result, error=body.error))
    return outcome.to_dict()


def _may_run(request: ApprovalRequest, identity: Identity) -> None:
    if identity.name != request.principal and identity.kind is not IdentityKind.ADMIN:
        raise Forbidden(f"only {request.principal or 'the requester'} may run this call",
                        code="not_requester")


@router.post("/check", response_model=schemas.Verdict, openapi_extra=_body_doc(schemas.CheckIn),
             summary="Explain the verdict for a call without recording anything")
async def check(request: Request) -> Any:
    state = state_of(request)
    await authenticate(state.gate, request)
    body = await read_body(request, schemas.CheckIn)
    context, _ = untrusted_context(body.context)
    verdict = await run_in_threadpool(
        state.gate.check, ToolCall(id=body.call_id, name=body.tool, args=body.args), context)
    return verdict.to_dict()


# ---- requests: what approvers see and decide ----------------------------------------------------

@router.get("/requests", response_model=schemas.RequestList, summary="List approval requests")
async def list_requests(request: Request,
                        status: Annotated[RequestStatus | None, Query()] = None,
                        thread_id: Annotated[str | None, Query(max_length=200)] = None,
                        limit: Annotated[int, Query(ge=1, le=500)] = 100) -> Any:
    state = state_of(request)
    await authenticate(state.gate, request)
    found = await run_in_threadpool(state.gate.store.list_requests, status=status,
                                    thread_id=thread_id, limit=limit)
    return {"requests": [_request(r) for r in found]}


@router.get("/requests/{request_id}", response_model=schemas.RequestDetail,
            summary="One request with its decisions")
async def get_request(request: Request, request_id: str) -> Any:
    state = state_of(request)
    await authenticate(state.gate, request)
    return await run_in_threadpool(request_detail, state.gate, request_id)


def request_detail(gate: Gate, request_id: str) -> dict[str, Any]:
    req = gate.store_get(request_id)
    decisions = gate.store.decisions(req.id)
    approvals = len({d.approver for d in decisions if d.kind in (
        DecisionKind.APPROVE, DecisionKind.EDIT) and d.args_hash == req.run_hash})
    return {**_request(req), "approvals": approvals, "decisions": [
        {"kind": d.kind.value, "approver": d.approver, "args_hash": d.args_hash,
         "reason": d.reason, "at": d.created_at} for d in decisions]}


@router.post("/requests/{request_id}/decisions", response_model=schemas.DecisionResult,
             openapi_extra=_body_doc(schemas.DecisionIn),
             summary="Approve, reject, edit or respond, as the signed-in approver")
async def decide(request: Request, request_id: str,
                 idempotency_key: Annotated[str | None, Header(max_length=200)] = None) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    require_decider(identity)
    body = await read_body(request, schemas.DecisionIn)
    return (await decide_as(state, request_id, to_decision(body), identity,
                            idempotency_key)).to_dict()


def to_decision(body: schemas.DecisionIn) -> Decision:
    if body.kind == "approve":
        return Decision.approve(scope=body.scope)
    if body.kind == "reject":
        return Decision.reject(body.reason or "", body.alternatives)
    if body.kind == "edit":
        if body.args is None:
            raise RequestValidationError([{"loc": ("body", "args"), "msg":
                                           "an edit needs the new arguments", "type": "missing"}])
        return Decision.edit(body.args, reason=body.reason)
    return Decision.respond(body.message or "")


async def decide_as(state: Any, request_id: str, decision: Decision, identity: Identity,
                    idempotency_key: str | None) -> Any:
    result = await run_in_threadpool(state.gate.decide, request_id, decision,
                                     identity=identity, idempotency_key=idempotency_key)
    state.metrics.decisions.labels(decision.kind.value).inc()
    if result.transitioned and not result.replayed:
        state.metrics.latency.observe(max(0.0, state.gate.clock() - result.request.created_at))
    return result


# ---- threads ------------------------------------------------------------------------------------

@router.get("/threads/{thread_id}", response_model=schemas.Thread,
            summary="A thread's review mode and what it waits for")
async def get_thread(request: Request, thread_id: str) -> Any:
    state = state_of(request)
    await authenticate(state.gate, request)
    return await run_in_threadpool(thread_view, state.gate, thread_id)


def thread_view(gate: Gate, thread_id: str) -> dict[str, Any]:
    config = gate.policy.config
    stored = gate.store.thread_mode(thread_id)
    pending = gate.store.pending_on_thread(thread_id)
    return {"thread_id": thread_id, "review_mode": stored or config.default_review_mode.value,
            "stored": stored is not None, "ceiling": config.ceiling.value,
            "allowed_modes": [m.value for m in allowed_modes(gate)],
            "pending": [_request(r) for r in pending], "running": run_in_progress(gate, thread_id)}


def allowed_modes(gate: Gate) -> list[ReviewMode]:
    return list(MODE_ORDER[: MODE_ORDER.index(gate.policy.config.ceiling) + 1])


def run_in_progress(gate: Gate, thread_id: str) -> bool:
    """A call of this thread is executing right now: its mode must not change under it."""
    return bool(gate.store.list_requests(status=RequestStatus.EXECUTING, thread_id=thread_id,
                                         limit=1))


def set_mode(gate: Gate, thread_id: str, mode: str, identity: Identity) -> dict[str, Any]:
    parsed = ReviewMode(mode)
    if parsed not in allowed_modes(gate):
        raise Forbidden(f"review mode {mode} is above this policy's ceiling "
                        f"{gate.policy.config.ceiling.value}", code="above_ceiling")
    if run_in_progress(gate, thread_id):
        raise Conflict(f"thread {thread_id} has a call executing; change its mode when it "
                       "ends", code="run_in_progress")
    gate.set_thread_mode(thread_id, parsed, actor=identity.name)
    return thread_view(gate, thread_id)


@router.put("/threads/{thread_id}", response_model=schemas.Thread,
            openapi_extra=_body_doc(schemas.ThreadIn),
            summary="Set a thread's review mode (approvers; refused while a call executes)")
async def put_thread(request: Request, thread_id: str) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    require_decider(identity)
    body = await read_body(request, schemas.ThreadIn)
    return await run_in_threadpool(set_mode, state.gate, thread_id, body.review_mode, identity)


# ---- audit and events ---------------------------------------------------------------------------

@router.get("/audit", response_model=schemas.AuditPage,
            summary="Audit events after an index; ?verify=true checks the whole chain")
async def audit(request: Request, after: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
                limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                verify: bool = False) -> Any:
    state = state_of(request)
    await authenticate(state.gate, request)

    def read() -> dict[str, Any]:
        store = state.gate.store
        events = [e.to_dict() for e in store.audit_events(after=after, limit=limit)]
        head_index, head_hash = store.audit_head()
        page: dict[str, Any] = {"events": events, "head_index": head_index,
                                "head_hash": head_hash}
        if verify:
            checked = store.verify_audit()
            page.update(verified=checked.ok, first_bad=checked.first_bad)
        return page

    return await run_in_threadpool(read)


@router.get("/events", summary="Server-sent events: every state change, live",
            response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}})
async def events(request: Request,
                 last_event_id: Annotated[str | None, Header(max_length=20)] = None,
                 after: Annotated[int | None, Query(ge=0, le=MAX_INDEX)] = None) -> Response:
    state = state_of(request)
    await authenticate(state.gate, request)
    start = after
    if start is None and last_event_id is not None and last_event_id.isdigit():
        start = min(int(last_event_id), MAX_INDEX)
    return StreamingResponse(event_stream(state, request, start),
                             media_type="text/event-stream",
                             headers={"X-Accel-Buffering": "no"})


health = APIRouter()


@health.get("/healthz", response_model=schemas.Health, summary="Liveness and the database")
async def healthz(request: Request) -> Any:
    state = state_of(request)
    try:
        await run_in_threadpool(state.gate.store.audit_head)
    except SignoffError:
        raise
    except Exception as exc:
        from signoff.errors import StoreError  # noqa: PLC0415

        raise StoreError(f"database unavailable: {type(exc).__name__}") from None
    return {"status": "ok", "backend": state.gate.store.backend, "version": __version__}


@health.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
async def metrics(request: Request) -> Response:
    state = state_of(request)
    body, content_type = await run_in_threadpool(state.metrics.render)
    return Response(body, media_type=content_type)


__all__ = ["JSONResponse", "health", "router"]
