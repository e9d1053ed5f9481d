"""The approver's half of the API: list and read requests, decide or cancel them, set
thread modes."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from starlette.concurrency import run_in_threadpool

from signoff.identity import Identity
from signoff.kernel.bulk import BulkResult
from signoff.kernel.deciding import approvers_of
from signoff.kernel.gate import Gate
from signoff.kernel.visibility import principal_filter, visible
from signoff.model import Decision, RequestStatus, Risk
from signoff.server import schemas
from signoff.server.auth import authenticate, require_decider
from signoff.server.bodies import (
    RequestId,
    ThreadId,
    body_doc,
    read_body,
    request_fields,
)
from signoff.server.state import state_of
from signoff.server.threads import set_mode, thread_view
from signoff.store.pages import CURSOR_MAX, RequestQuery, cursor_of, parse_cursor
from signoff.times import TIME_HELP, parse_time

router = APIRouter()


@router.get("/requests", response_model=schemas.RequestList, summary="List approval requests")
async def list_requests(request: Request, *,
                        status: Annotated[RequestStatus | None, Query()] = None,
                        thread_id: Annotated[schemas.Identifier | None, Query()] = None,
                        risk: Annotated[Risk | None, Query()] = None,
                        tool: Annotated[schemas.ToolName | None, Query()] = None,
                        requester: Annotated[schemas.Identifier | None, Query(
                            description="the principal or agent who asked")] = None,
                        since: Annotated[str | None, Query(
                            max_length=64, description="created at or after: "
                            f"{TIME_HELP}")] = None,
                        until: Annotated[str | None, Query(
                            max_length=64, description=f"created before: {TIME_HELP}")] = None,
                        q: Annotated[schemas.SearchText | None, Query(
                            description="text in the id, tool, summary, description or "
                            "thread id (case-insensitive)")] = None,
                        cursor: Annotated[str | None, Query(
                            max_length=CURSOR_MAX, description="next_cursor of the page "
                            "before")] = None,
                        limit: Annotated[int, Query(ge=1, le=500)] = 100) -> Any:
    """Newest first, a page at a time (a keyset: ``signoff.store.pages``); an agent
    lists only the calls it asked (``signoff.kernel.visibility``)."""
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    own = principal_filter(identity, requester)
    after = parse_cursor(cursor) if cursor is not None else None
    now = time.time()  # the same forms as the CLI's --since/--until (``signoff.times``)
    query = RequestQuery(status=status, thread_id=thread_id, risk=risk, tool=tool,
                         requester=requester, principal=own,
                         since=None if since is None else parse_time("since", since, now=now),
                         until=None if until is None else parse_time("until", until, now=now),
                         text=q or None)
    found = await run_in_threadpool(lambda: state.gate.list_requests(
        query=query, after=after, limit=limit + 1))
    more = len(found) > limit
    page = found[:limit]
    return {"requests": [request_fields(r) for r in page],
            "next_cursor": cursor_of(page[-1]) if more else None}


@router.get("/requests/{request_id}", response_model=schemas.RequestDetail,
            summary="One request with its decisions")
async def get_request(request: Request, request_id: RequestId) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    return await run_in_threadpool(request_detail, state.gate, request_id, identity)


def request_detail(gate: Gate, request_id: str,
                   identity: Identity | None = None) -> dict[str, Any]:
    """The request with its decisions; ``identity`` must be allowed to see it (an agent:
    only its own, else ``404 not_found``)."""
    req = gate.request(request_id)
    if identity is not None:
        visible(identity, req)
    decisions = gate.decisions(req.id)
    return {**request_fields(req), "approvals": len(approvers_of(req, decisions)),
            "changes": [dict(change) for change in req.changes], "decisions": [
        {"kind": d.kind.value, "scope": d.scope.value, "approver": d.approver,
         "args_hash": d.args_hash,
         "reason": d.reason, "at": d.created_at} for d in decisions]}


@router.post("/requests/{request_id}/decisions", response_model=schemas.DecisionResult,
             openapi_extra=body_doc(schemas.DecisionIn),
             summary="Approve, reject, edit or respond, as the signed-in approver")
async def decide(request: Request, request_id: RequestId,
                 idempotency_key: Annotated[schemas.Identifier | None, Header()] = None) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    require_decider(identity)
    body = await read_body(request, schemas.DecisionIn)
    return (await decide_as(state, request_id, to_decision(body), identity,
                            idempotency_key)).to_dict()


@router.post("/requests/bulk-decisions", response_model=schemas.BulkDecisionResult,
             openapi_extra=body_doc(schemas.BulkDecisionIn),
             summary="Approve once each listed call of one shape, each by its own decision")
async def bulk_decide(request: Request) -> Any:
    """One confirmation, many approvals (``signoff.kernel.bulk``): each listed call with
    the arguments hash shown; what was not approved is in ``refused``, with its code."""
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    require_decider(identity)
    body = await read_body(request, schemas.BulkDecisionIn)
    result = await approve_many(state, [(c.request_id, c.args_hash) for c in body.calls],
                                identity)
    return bulk_body(result)


def bulk_body(result: BulkResult) -> dict[str, Any]:
    """``BulkResult.to_dict`` with each decision's request as this decision left it: a
    ``Client`` answers with the very ``BulkResult`` the gate does, without reading each
    request again (read later, an approved request may be executing already)."""
    body = result.to_dict()
    for shown, decided in zip(body["decisions"], result.decided, strict=True):
        shown["request"] = request_fields(decided.request)
    return body


async def approve_many(state: Any, listed: list[tuple[str, str]],
                       identity: Identity) -> BulkResult:
    """``Gate.approve_many``, counted in the metrics like one-by-one approvals."""
    result: BulkResult = await run_in_threadpool(
        lambda: state.gate.approve_many(listed, identity=identity))
    now = state.gate.clock()
    for decided in result.decided:
        state.metrics.decisions.labels("approve").inc()
        if decided.transitioned:
            state.metrics.latency.observe(max(0.0, now - decided.request.created_at))
    return result


@router.post("/requests/{request_id}/cancel", response_model=schemas.Request,
             openapi_extra=body_doc(schemas.CancelIn),
             summary="Withdraw a pending or approved request (its asker, or an admin)")
async def cancel(request: Request, request_id: RequestId) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    body = await read_body(request, schemas.CancelIn)
    cancelled = await run_in_threadpool(
        lambda: state.gate.withdraw(request_id, identity=identity, reason=body.reason,
                                    pending_only=body.pending_only))
    return request_fields(cancelled)


def to_decision(body: schemas.DecisionIn) -> Decision:
    """The decision a body says, bound to the arguments hash it says was shown (if any)."""
    return replace(_decision(body), expected_args_hash=body.expected_args_hash)


def _decision(body: schemas.DecisionIn) -> Decision:
    if body.kind == "approve":
        return Decision.approve(scope=body.scope,
                                listed=[(c.request_id, c.args_hash) for c in body.listed],
                                assertion=body.assertion)
    if body.kind == "reject":
        return Decision.reject(body.reason or "", body.alternatives)
    if body.kind == "edit":
        if body.args is None:
            raise RequestValidationError([{"loc": ("body", "args"), "msg":
                                           "an edit needs the new arguments", "type": "missing"}])
        return Decision.edit(body.args, reason=body.reason, assertion=body.assertion)
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

@router.get("/threads/{thread_id:path}", response_model=schemas.Thread,
            summary="A thread's review mode and what it waits for")
async def get_thread(request: Request, thread_id: ThreadId) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    return await run_in_threadpool(thread_view, state.gate, thread_id, identity)



@router.put("/threads/{thread_id:path}", response_model=schemas.Thread,
            openapi_extra=body_doc(schemas.ThreadIn),
            summary="Set a thread's review mode (approvers; refused while a call executes)")
async def put_thread(request: Request, thread_id: ThreadId) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    require_decider(identity)
    body = await read_body(request, schemas.ThreadIn)
    return await run_in_threadpool(set_mode, state.gate, thread_id, body.review_mode, identity)


# ---- audit and events ---------------------------------------------------------------------------
