"""``/api/v1/users``: the user lifecycle over HTTP, for admins only (``403 admin_required``).

The same operations as ``signoff users``, through the same gate methods, each
audited with the admin as actor. Tokens appear in an answer once, when made
(add, rotate); a login link likewise.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from signoff.identity import Account, Session
from signoff.kernel.accounts import expiry
from signoff.kernel.sessions import login_url
from signoff.server.auth import admin_of
from signoff.server.bodies import body_doc, read_body
from signoff.server.schemas import Identifier, Strict
from signoff.server.state import AppState

router = APIRouter(prefix="/users", tags=["users"])
UserName = Annotated[Identifier, Path(description="a user name")]
Role = Annotated[str, Field(min_length=1, max_length=64)]
Expires = Field(None, max_length=20, description="token lifetime: '90d', '12h', '30m', "
                "seconds, or 'never' (the default)")


class UserIn(Strict):
    name: str = Field(min_length=1, max_length=64)
    kind: Literal["approver", "agent", "admin"] = "approver"
    roles: list[Role] = Field(default_factory=list, max_length=50)
    expires: str | None = Expires


class RolesIn(Strict):
    roles: list[Role] = Field(max_length=50)


class RotateIn(Strict):
    expires: str | None = Expires


class SessionOut(BaseModel):
    id: str
    user: str
    created_at: float
    last_seen: float
    expires_at: float
    idle_timeout: float
    ends_at: float
    via: str


class UserOut(BaseModel):
    name: str
    kind: str
    roles: list[str]
    status: Literal["active", "disabled", "token_expired", "removed"]
    created_at: float
    token_issued_at: float
    token_expires_at: float | None = None
    removed_at: float | None = None
    sessions: list[SessionOut] = Field(default_factory=list)
    token: str | None = Field(None, description="only when just made (add, rotate): shown once")
    changed: bool | None = None


class UserList(BaseModel):
    users: list[UserOut]


class LoginLink(BaseModel):
    user: str
    url: str = Field(description="opens the inbox signed in as the user; works once")
    expires_at: float


class SessionList(BaseModel):
    sessions: list[SessionOut]


def _user(state: AppState, account: Account, sessions: list[Session] | None = None,
          **extra: Any) -> dict[str, Any]:
    """A user as the API shows it, with its live sessions (read here unless given)."""
    gate = state.gate
    if sessions is None:
        sessions = gate.sessions(account.name)
    return {**account.to_dict(gate.clock()), "sessions": [s.to_dict() for s in sessions],
            **extra}


@router.get("", response_model=UserList, summary="Users (admins only)")
async def list_users(request: Request,
                     removed: Annotated[bool, Query(description="include removed users")] = False
                     ) -> Any:
    state, _ = await admin_of(request)

    def read() -> dict[str, Any]:
        live = state.gate.live_sessions()
        return {"users": [_user(state, a, live.get(a.name, []))
                          for a in state.gate.users(removed=removed)]}

    return await run_in_threadpool(read)


@router.post("", response_model=UserOut, status_code=201, openapi_extra=body_doc(UserIn),
             summary="Add a user; the answer holds its token, once")
async def add_user(request: Request) -> Any:
    state, admin = await admin_of(request)
    body = await read_body(request, UserIn)

    def add() -> dict[str, Any]:
        _, token = state.gate.add_user(body.name, roles=body.roles, kind=body.kind,
                                       expires_in=expiry(body.expires), actor=admin.name)
        return _user(state, state.gate.user(body.name), token=token)

    return await run_in_threadpool(add)


@router.get("/{name}", response_model=UserOut, summary="One user, with its sessions")
async def get_user(request: Request, name: UserName) -> Any:
    state, _ = await admin_of(request)
    return await run_in_threadpool(lambda: _user(state, state.gate.user(name)))


@router.post("/{name}/disable", response_model=UserOut,
             summary="Disable: its token and sessions stop working on every server")
async def disable(request: Request, name: UserName) -> Any:
    state, admin = await admin_of(request)

    def run() -> dict[str, Any]:
        account, changed = state.gate.disable_user(name, actor=admin.name)
        return _user(state, account, changed=changed)

    return await run_in_threadpool(run)


@router.post("/{name}/enable", response_model=UserOut, summary="Enable a disabled user")
async def enable(request: Request, name: UserName) -> Any:
    state, admin = await admin_of(request)

    def run() -> dict[str, Any]:
        account, changed = state.gate.enable_user(name, actor=admin.name)
        return _user(state, account, changed=changed)

    return await run_in_threadpool(run)


@router.delete("/{name}", response_model=UserOut,
               summary="Remove: token and sessions end; past decisions and audit stay")
async def remove(request: Request, name: UserName) -> Any:
    state, admin = await admin_of(request)
    return await run_in_threadpool(
        lambda: _user(state, state.gate.remove_user(name, actor=admin.name)))


@router.post("/{name}/rotate", response_model=UserOut,
             openapi_extra={"requestBody": {**body_doc(RotateIn)["requestBody"],
                                            "required": False}},
             summary="A new token (shown once); the old one and the sessions end")
async def rotate(request: Request, name: UserName) -> Any:
    state, admin = await admin_of(request)
    body = await read_body(request, RotateIn) if await request.body() else RotateIn()

    def run() -> dict[str, Any]:
        account, token = state.gate.rotate_token(name, expires_in=expiry(body.expires),
                                                 actor=admin.name)
        return _user(state, account, token=token)

    return await run_in_threadpool(run)


@router.put("/{name}/roles", response_model=UserOut, openapi_extra=body_doc(RolesIn),
            summary="Replace a user's roles")
async def roles(request: Request, name: UserName) -> Any:
    state, admin = await admin_of(request)
    body = await read_body(request, RolesIn)
    return await run_in_threadpool(
        lambda: _user(state, state.gate.set_roles(name, body.roles, actor=admin.name)))


@router.post("/{name}/login-links", response_model=LoginLink, status_code=201,
             summary="A one-time login link for the user (valid for login_link_ttl)")
async def login_link(request: Request, name: UserName) -> Any:
    state, admin = await admin_of(request)
    code, expires_at = await run_in_threadpool(
        lambda: state.gate.mint_login_link(name, ttl=state.settings.limits.link_ttl,
                                           actor=admin.name))
    return {"user": name, "url": login_url(state.settings.base_url, code),
            "expires_at": expires_at}


@router.get("/{name}/sessions", response_model=SessionList, summary="A user's live sessions")
async def sessions(request: Request, name: UserName) -> Any:
    state, _ = await admin_of(request)
    found = await run_in_threadpool(state.gate.sessions, name)
    return {"sessions": [s.to_dict() for s in found]}


@router.delete("/{name}/sessions", response_model=SessionList,
               summary="End all of a user's sessions; the ones ended")
async def revoke_all(request: Request, name: UserName) -> Any:
    state, admin = await admin_of(request)
    ended = await run_in_threadpool(lambda: state.gate.revoke_sessions(name, actor=admin.name))
    return {"sessions": [s.to_dict() for s in ended]}


@router.delete("/{name}/sessions/{session_id}", status_code=204, response_class=Response,
               summary="End one session")
async def revoke_one(request: Request, name: UserName,
                     session_id: Annotated[str, Path(max_length=64)]) -> Response:
    state, admin = await admin_of(request)
    await run_in_threadpool(lambda: state.gate.revoke_sessions(name, session_id=session_id,
                                                               actor=admin.name))
    return Response(status_code=204)
