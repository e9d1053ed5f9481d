"""What the server has to tell: the audit log, the live event stream, health and metrics."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response, StreamingResponse

from signoff import __version__
from signoff.kernel.visibility import require_approver
from signoff.server import schemas
from signoff.server.auth import authenticate, still_signed_in
from signoff.server.bodies import MAX_INDEX
from signoff.server.events import event_stream
from signoff.server.state import state_of

router = APIRouter()


@router.get("/audit", response_model=schemas.AuditPage,
            summary="Audit events after an index; ?verify=true checks the whole chain")
async def audit(request: Request, after: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
                limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                verify: bool = False) -> Any:
    state = state_of(request)
    require_approver(await authenticate(state.gate, request), "the audit log")

    def read() -> dict[str, Any]:
        gate = state.gate
        events = [e.to_dict() for e in gate.audit_events(after=after, limit=limit)]
        head_index, head_hash = gate.audit_head()
        page: dict[str, Any] = {"events": events, "head_index": head_index,
                                "head_hash": head_hash}
        if verify:
            checked = gate.verify_audit()
            page.update(verified=checked.ok, first_bad=checked.first_bad)
        return page

    return await run_in_threadpool(read)


@router.get("/events", summary="Server-sent events: every state change, live",
            response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}})
async def events(request: Request,
                 last_event_id: Annotated[schemas.Index | None, Header()] = None,
                 after: Annotated[int | None, Query(ge=0, le=MAX_INDEX)] = None) -> Response:
    state = state_of(request)
    require_approver(await authenticate(state.gate, request), "the event stream")
    # A reconnecting browser sends Last-Event-ID: it saw up to there, which is later than
    # the ?after= its page was rendered with.
    start = after if last_event_id is None else int(last_event_id)  # ASCII digits: checked
    return StreamingResponse(event_stream(state, request, start,
                                          lambda: still_signed_in(state.gate, request)),
                             media_type="text/event-stream",
                             headers={"X-Accel-Buffering": "no"})


health = APIRouter()


@health.get("/healthz", response_model=schemas.Health, summary="Liveness and the database")
async def healthz(request: Request) -> Any:
    state = state_of(request)
    await run_in_threadpool(state.gate.audit_head)  # a store fault: 503, typed
    config = state.gate.config
    return {"status": "ok", "backend": state.gate.backend, "version": __version__,
            "policy": config.source, "policy_version": config.version}


@health.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
async def metrics(request: Request) -> Response:
    state = state_of(request)
    body, content_type = await run_in_threadpool(state.metrics.render)
    return Response(body, media_type=content_type)


