"""The agent's half of the API: propose a call, wait for its outcome, claim it, report it.

An agent in any language proposes with ``POST /calls``, long-polls
``GET /calls/{id}?wait=30`` for the outcome, and — when approved — claims the
exact approved arguments with ``POST /calls/{id}/claim`` and reports what the
tool did with ``POST /calls/{id}/result`` (the fencing token proves it still
holds the claim). Waiting never holds a thread: it awaits the change feed.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from signoff.errors import Conflict, Forbidden
from signoff.identity import Identity, IdentityKind
from signoff.kernel.execution import Execution
from signoff.kernel.outcomes import OutcomeKind
from signoff.kernel.visibility import visible
from signoff.model import ApprovalRequest, RunContext, ToolCall
from signoff.policy.modes import untrusted_context
from signoff.server import schemas
from signoff.server.auth import authenticate
from signoff.server.bodies import body_doc, read_body
from signoff.server.call_ref import CallRef, ThreadOfCall, resolve
from signoff.server.state import state_of

router = APIRouter()


@router.post("/calls", response_model=schemas.CallOut, openapi_extra=body_doc(schemas.CallIn),
             summary="Propose a tool call")
async def propose(request: Request) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    body = await read_body(request, schemas.CallIn)
    context, stripped = untrusted_context(body.context)
    context = _with_principal(context, identity)
    call = ToolCall(id=body.call_id, name=body.tool, args=body.args,
                    description=body.description)
    if context.thread_id and context.run_id:
        # A thread waiting for a decision from another run is waiting for input, not
        # finished: a new run on it is refused (409 thread_waiting) until that is resolved.
        # The context comes back with its review mode fixed: propose need not read it again.
        context = await run_in_threadpool(state.gate.start_run, context)
    proposal = await run_in_threadpool(state.gate.propose, call, context,
                                       evidence=tuple(body.evidence))
    request_id = proposal.request_id
    state.metrics.proposals.labels(proposal.kind.value).inc()
    return {"status": proposal.kind.value, "request_id": request_id,
            "verdict": proposal.verdict.to_dict(), "stripped": list(stripped),
            "wait_url": f"/api/v1/calls/{request_id}?wait=30" if request_id else None}


def _with_principal(context: RunContext, identity: Identity) -> RunContext:
    return replace(context, principal=identity.name)


@router.get("/calls/{request_id}", response_model=schemas.Outcome,
            summary="The call's outcome (by request id or the agent's call id); "
                    "?wait=SECONDS long-polls while it is pending")
async def call_outcome(request: Request, request_id: CallRef, thread_id: ThreadOfCall = None,
                       wait: Annotated[float, Query(ge=0, le=3600)] = 0) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    # An agent polls only its own calls: others' are not found.
    request_id = (await run_in_threadpool(resolve, state.gate, identity, request_id, thread_id)).id
    deadline = time.monotonic() + min(wait, state.settings.long_poll_max)
    state.metrics.waiters.inc()
    try:
        while True:
            generation = state.feed.generation
            outcome = await run_in_threadpool(state.gate.outcome, request_id)
            remaining = deadline - time.monotonic()
            # A stopping server answers with what it has (still pending), not a reset.
            if (outcome.kind is not OutcomeKind.PENDING or remaining <= 0
                    or state.feed.draining):
                return outcome.to_dict()
            await state.feed.changed(generation, min(remaining, 5.0))
    finally:
        state.metrics.waiters.dec()


@router.post("/calls/{request_id}/claim", response_model=schemas.Claim,
             summary="Re-validate an approved call and claim it: run exactly the args returned")
async def claim(request: Request, request_id: CallRef, thread_id: ThreadOfCall = None) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    current = await run_in_threadpool(resolve, state.gate, identity, request_id, thread_id)
    request_id = current.id
    _may_run(current, identity)
    got = await run_in_threadpool(state.gate.claim, request_id, executor=identity.name)
    if isinstance(got, Execution):
        refreshed = await run_in_threadpool(state.gate.request, request_id)
        return {"request_id": got.request_id, "fencing_token": got.fencing_token,
                "args": got.args, "lease_until": refreshed.lease_until,
                "receipt": got.receipt}
    code = got.code or f"request_{got.kind.value}"
    raise Conflict(f"request {request_id} cannot be claimed: {got.kind.value}"
                   + (f" ({got.reason})" if got.reason else ""), code=code,
                   status=got.kind.value)


@router.post("/calls/{request_id}/result", response_model=schemas.Outcome,
             openapi_extra=body_doc(schemas.ResultIn),
             summary="Report what the claimed call did (holder of the fencing token only)")
async def report(request: Request, request_id: CallRef, thread_id: ThreadOfCall = None) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    body = await read_body(request, schemas.ResultIn)
    current = await run_in_threadpool(resolve, state.gate, identity, request_id, thread_id)
    request_id = current.id
    _may_run(current, identity)
    await run_in_threadpool(
        lambda: state.gate.report(Execution(request_id, body.fencing_token),
                                  result=body.result, error=body.error, actor=identity.name))
    # Read back as any poller would see it (with an approver's edit and its reason).
    outcome = await run_in_threadpool(state.gate.outcome, request_id)
    return outcome.to_dict()


def _may_run(request: ApprovalRequest, identity: Identity) -> None:
    visible(identity, request)
    if identity.name != request.principal and identity.kind is not IdentityKind.ADMIN:
        raise Forbidden(f"only {request.principal or 'the requester'} may run this call",
                        code="not_requester")


@router.post("/check", response_model=schemas.Verdict, openapi_extra=body_doc(schemas.CheckIn),
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
