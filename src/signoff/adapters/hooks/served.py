"""``POST /api/v1/hooks/{harness}``: a coding agent's hook event judged by a running server
(the route ``signoff serve`` adds to the server's API).

The resident mode of ``signoff hook``: the hook process sends the event it was given
(Claude Code's, Codex's or Gemini CLI's JSON, verbatim) with the agent's token, and the
server judges it as the in-process hook would (``signoff.adapters.hooks``) — so the
process the harness starts for every tool call need import nothing but the standard
library (``signoff.adapters.hooks.resident``). The answer is what that hook prints and how
it exits: the body is its stdout, ``Signoff-Exit-Code`` its exit status and
``Signoff-Stderr`` (a JSON string, when there is any) its stderr.

Every step runs as the token's user (``CallerGate``): the call is proposed with that
user as its principal, and only that user's requests are read, claimed, reported or
cancelled — a session id another agent chose does not lend its requests. An approved
call's claim stays on the server until the post-call event reports its result.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import anyio.from_thread
from fastapi import APIRouter, Query, Request, Response
from fastapi import Path as PathParam
from starlette.concurrency import run_in_threadpool

from signoff.adapters.hooks import claims
from signoff.adapters.hooks.harness import Reply, harness_named
from signoff.adapters.hooks.judging import HookOptions
from signoff.canonical import parse_args
from signoff.errors import Forbidden, InvalidArguments
from signoff.identity import Identity, IdentityKind
from signoff.kernel.execution import Execution
from signoff.kernel.outcomes import Outcome, OutcomeKind
from signoff.kernel.visibility import visible
from signoff.model import ApprovalRequest, RunContext, ToolCall
from signoff.server import schemas
from signoff.server.auth import authenticate
from signoff.server.bodies import MAX_BODY
from signoff.server.state import AppState, state_of

router = APIRouter()
HarnessName = Annotated[schemas.Identifier, PathParam(
    description="the coding agent whose hook event this is: claude-code, codex or gemini")]

_EVENT_DOC = {"requestBody": {"required": True, "description": "the hook event, verbatim",
                              "content": {"application/json": {"schema": {"type": "object"}}}}}


@router.post("/hooks/{harness}", openapi_extra=_EVENT_DOC, response_class=Response,
             summary="Answer a coding agent's hook event (claude-code, codex, gemini) as "
                     "`signoff hook <harness>` would: the body is the hook's stdout, "
                     "Signoff-Exit-Code its exit status, Signoff-Stderr its stderr (JSON)")
async def hook_event(request: Request, harness: HarnessName,
                     event: Annotated[str, Query(pattern="^(pre|post)$")] = "pre",
                     wait: Annotated[float, Query(gt=0, le=86400)] = 45.0,
                     ask_locally: bool = False) -> Response:
    state = state_of(request)
    identity = await authenticate(state.gate, request)
    face = harness_named(harness)
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise InvalidArguments(f"body exceeds {MAX_BODY} bytes", code="too_large")
    try:  # a JSON object, or a typed 4xx; what is in it is the harness's to read (a deny)
        parse_args(raw)
    except InvalidArguments as exc:
        raise InvalidArguments(f"body: {exc.message}", code=exc.code) from None
    waits = min(wait, state.settings.long_poll_max)
    options = HookOptions(agent=face.agent, principal=identity.name, wait_seconds=waits,
                          ask_locally=ask_locally, inbox_url=state.settings.base_url,
                          claims_dir=_claims_dir(identity, face.agent))
    gate = CallerGate(state, identity, face.agent)
    if event == "post":
        await run_in_threadpool(face.post, gate, raw, options)
        return _reply(Reply())
    return _reply(await run_in_threadpool(face.pre, gate, raw, options))


def _reply(reply: Reply) -> Response:
    headers = {"Signoff-Exit-Code": str(reply.exit_code)}
    if reply.stderr:
        headers["Signoff-Stderr"] = json.dumps(reply.stderr)  # one ASCII line
    return Response(reply.stdout, media_type="text/plain; charset=utf-8", headers=headers)


def _claims_dir(identity: Identity, agent: str) -> Path:
    """Where the claims of this user's hooks wait for their post-call event."""
    who = hashlib.sha256(identity.name.encode()).hexdigest()[:24]
    return claims.default_dir("served") / who / agent


class CallerGate:
    """The gate as one authenticated caller may use it from a hook: proposals are theirs,
    and a request that is not theirs is not found (or, to run, forbidden)."""

    def __init__(self, state: AppState, identity: Identity, agent: str) -> None:
        self.state = state
        self.gate = state.gate
        self.identity = identity
        self.agent = agent  # the harness: a request names it as its agent

    def propose(self, call: ToolCall, /, context: RunContext | None = None) -> Any:
        context = replace(context or RunContext(), principal=self.identity.name)
        return self.gate.propose(call, context, agent=self.agent)

    def _own(self, request_id: str) -> ApprovalRequest:
        return visible(self.identity, self.gate.get_request(request_id))

    def _runs(self, request_id: str) -> ApprovalRequest:
        request = self._own(request_id)
        if request.principal != self.identity.name \
                and self.identity.kind is not IdentityKind.ADMIN:
            raise Forbidden(f"only {request.principal or 'the requester'} may run this call",
                            code="not_requester")
        return request

    def get_request(self, request_id: str) -> ApprovalRequest:
        return self._own(request_id)

    def outcome(self, request_id: str) -> Outcome:
        self._own(request_id)
        return self.gate.outcome(request_id)

    def wait(self, request_id: str, *, timeout: float) -> Outcome:
        """Wait on the server's change feed (not a thread of its own per poll); a stopping
        server answers with what it has."""
        self._own(request_id)
        feed = self.state.feed
        ends = time.monotonic() + timeout
        while True:
            generation = feed.generation
            outcome = self.gate.outcome(request_id)
            remaining = ends - time.monotonic()
            if outcome.kind is not OutcomeKind.PENDING or remaining <= 0 or feed.draining:
                return outcome
            anyio.from_thread.run(feed.changed, generation, min(remaining, 5.0))

    def claim(self, request_id: str) -> Execution | Outcome:
        self._runs(request_id)
        return self.gate.claim(request_id, executor=self.identity.name)

    def report(self, execution: Execution, *, result: Any = None,
               error: str | None = None) -> Outcome:
        self._runs(execution.request_id)
        return self.gate.report(execution, result=result, error=error,
                                actor=self.identity.name)

    def cancel(self, request_id: str, *, actor: str | None, reason: str) -> Outcome:
        self._runs(request_id)
        return self.gate.cancel(request_id, actor=self.identity.name, reason=reason)

    def note_call_result(self, data: dict[str, Any], *, actor: str | None) -> None:
        self.gate.note_call_result(data, actor=self.identity.name)


__all__ = ["CallerGate", "router"]
