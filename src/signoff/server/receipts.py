"""Receipts over HTTP: the public keys at ``/.well-known/jwks.json`` and each request's receipt.

The JWKS is public (no token) and cacheable: an executor elsewhere fetches it once and
verifies receipts offline (``signoff.receipts``); it holds every key any server on this
database published, rotated ones included, so a receipt verifies whichever server signed
it. A request's receipt is read as the request is: by its asker and by approvers (an
agent sees only its own, ``404 not_found`` otherwise).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from signoff import receipts
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.visibility import visible
from signoff.server import schemas
from signoff.server.auth import authenticate
from signoff.server.bodies import RequestId
from signoff.server.state import state_of

router = APIRouter()
well_known = APIRouter()
JWKS_PATH = "/.well-known/jwks.json"
# Long enough to spare the server, short enough that a key published by a rotation or a
# new server is seen soon (a verifier meeting an unknown kid fetches again).
JWKS_MAX_AGE = 300


@well_known.get(JWKS_PATH, response_model=schemas.Jwks,
                summary="The public keys receipts are signed with (JWKS, no token needed)")
async def jwks(request: Request, response: Response) -> Any:
    state = state_of(request)
    response.headers["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE}"
    return await run_in_threadpool(state.gate.jwks)


@router.get("/requests/{request_id}/receipt", response_model=schemas.ReceiptOut,
            summary="The signed receipt of a request's approval (404 receipt_unavailable: "
                    "not approved, or signed by no key)")
async def receipt(request: Request, request_id: RequestId) -> Any:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    return await run_in_threadpool(receipt_of, state.gate, request_id, identity)


def receipt_of(gate: Gate, request_id: str, identity: Identity) -> dict[str, Any]:
    visible(identity, gate.request(request_id))
    token = gate.receipt(request_id)
    seen = receipts.peek(token)
    return {"request_id": request_id, "receipt": token, "kid": seen.kid,
            "payload": seen.to_dict()}
