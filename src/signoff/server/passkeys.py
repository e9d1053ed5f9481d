"""Approvers' passkeys over HTTP: the settings page, its JSON API, and the options an
approval with a passkey is signed with.

The relying party is the server's public URL (``ServerSettings.base_url``): its host is
the RP id (``localhost`` for ``http://localhost:PORT``), its scheme, host and port the
origin. Registering is ``POST /api/v1/passkeys/options`` then ``POST /api/v1/passkeys``
with the browser's answer; an approval's options come from
``POST /api/v1/requests/{id}/passkey-options``. Cookie-authenticated POSTs and DELETEs
carry the CSRF token (``X-CSRF-Token``), as every inbox write does. The kernel part
(``signoff.kernel.passkeys``) checks and writes; nothing here touches the store.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Path, Request
from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from signoff.errors import SignoffError
from signoff.identity import Identity
from signoff.server.auth import authenticate, require_decider
from signoff.server.bodies import RequestId, body_doc, read_body
from signoff.server.inbox import render, signed_in
from signoff.server.schemas import CredentialId, Strict
from signoff.server.state import AppState, state_of

router = APIRouter()  # under /api/v1
pages = APIRouter(include_in_schema=False)  # HTML pages, not the API


class PasskeyIn(Strict):
    credential: dict[str, Any] = Field(description="the browser's answer to "
                                       "navigator.credentials.create (PublicKeyCredential JSON)")
    name: str = Field("passkey", max_length=64, description="what to call it")


class PasskeyOptionsIn(Strict):
    kind: Literal["approve", "edit"] = "approve"
    args: dict[str, Any] | None = Field(None, description="edit: the edited arguments")


def relying_party(state: AppState) -> tuple[str, str]:
    """The RP id and origin passkeys are made for and used at: the server's public URL."""
    parts = urlsplit(state.settings.base_url)
    return parts.hostname or "localhost", f"{parts.scheme}://{parts.netloc}"


async def _decider(request: Request) -> tuple[AppState, Identity]:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    require_decider(identity)
    return state, identity


@router.get("/passkeys", summary="The signed-in approver's passkeys")
async def list_passkeys(request: Request) -> Any:
    state, identity = await _decider(request)
    found = await run_in_threadpool(state.gate.passkeys.passkeys, identity.name)
    return {"passkeys": [p.to_dict() for p in found]}


@router.post("/passkeys/options", summary="Options for navigator.credentials.create")
async def registration_options(request: Request) -> Any:
    state, identity = await _decider(request)
    rp_id, origin = relying_party(state)
    return await run_in_threadpool(lambda: state.gate.passkeys.registration_options(
        identity, rp_id=rp_id, origin=origin))


@router.post("/passkeys", status_code=201, openapi_extra=body_doc(PasskeyIn),
             summary="Register a passkey (the answer to the options' challenge)")
async def register(request: Request) -> Any:
    state, identity = await _decider(request)
    body = await read_body(request, PasskeyIn)
    passkey = await run_in_threadpool(lambda: state.gate.passkeys.register(
        identity, body.credential, name=body.name))
    return passkey.to_dict()


@router.delete("/passkeys/{credential_id}", status_code=204, summary="Remove a passkey",
               responses={204: {"description": "removed"}})
async def remove(request: Request, credential_id: Annotated[
        CredentialId, Path(description="the passkey's credential id (base64url)")]) -> Response:
    state, identity = await _decider(request)
    await run_in_threadpool(lambda: state.gate.passkeys.remove(
        identity.name, credential_id, actor=identity.name))
    return Response(status_code=204)


@router.post("/requests/{request_id}/passkey-options", openapi_extra=body_doc(PasskeyOptionsIn),
             summary="Options for navigator.credentials.get, to approve or edit with a passkey")
async def assertion_options(request: Request, request_id: RequestId) -> Any:
    state, identity = await _decider(request)
    body = await read_body(request, PasskeyOptionsIn)
    rp_id, _ = relying_party(state)
    return await run_in_threadpool(lambda: state.gate.passkeys.assertion_options(
        request_id, identity, rp_id=rp_id, kind=body.kind, args=body.args))


@pages.get("/settings/passkeys")
async def settings_page(request: Request, done: str | None = None) -> Response:
    who = await signed_in(request)
    if isinstance(who, Response):
        return who
    state = state_of(request)
    found = await run_in_threadpool(state.gate.passkeys.passkeys, who.name)
    flash = {"removed": "Passkey removed.", "added": "Passkey added."}.get(done or "")
    return render(request, "passkeys.html", passkeys=found, flash=flash,
                  rp_id=relying_party(state)[0], can_decide=who.may_decide)


@pages.post("/settings/passkeys/remove")
async def remove_form(request: Request) -> Response:
    form = await request.form()
    state = state_of(request)
    csrf, credential_id = form.get("csrf"), form.get("id")
    identity = await authenticate(state.gate, request,
                                  csrf=csrf if isinstance(csrf, str) else None)
    try:
        require_decider(identity)
        await run_in_threadpool(lambda: state.gate.passkeys.remove(
            identity.name, str(credential_id or ""), actor=identity.name))
    except SignoffError as exc:
        found = await run_in_threadpool(state.gate.passkeys.passkeys, identity.name)
        return render(request, "passkeys.html", status=exc.http_status, passkeys=found,
                      error={"code": exc.code, "message": exc.message},
                      rp_id=relying_party(state)[0], can_decide=identity.may_decide)
    return RedirectResponse(f"/settings/passkeys?done={quote('removed')}", status_code=303)
