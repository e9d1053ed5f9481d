"""``POST /slack/interactions``: Slack's interaction callbacks, verified before anything else.

Slack signs each callback with the app's signing secret (``v0=`` HMAC-SHA256 of
``v0:<timestamp>:<body>``), checked here with ``slack-sdk``'s own verifier. A
timestamp more than five minutes from this server's clock is refused
(``slack_stale``), a bad signature too (``slack_signature_invalid``), and a
signature seen before — a captured callback sent again — is refused
(``slack_replayed``): the seen signatures are kept in the database, so the
refusal holds on every server. Only then is the payload read, its shape checked
(``signoff.notify.slack_payload``: a field of another type or a missing one is
a 422 ``invalid_payload``); what it does is ``signoff.notify.slack_actions``.
The clicking user hears back in an ephemeral message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from signoff.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthenticated
from signoff.notify.slack_actions import act, reject_view
from signoff.notify.slack_payload import read
from signoff.server.state import state_of

log = logging.getLogger("signoff.server")
router = APIRouter()
WINDOW = 300.0  # seconds: Slack's own replay window
BODY_MAX = 256 * 1024


@router.post("/slack/interactions", include_in_schema=False)
async def interactions(request: Request) -> Response:
    state = state_of(request)
    notifier = state.notifier
    slack = notifier.slack if notifier is not None else None
    if slack is None:
        raise NotFound("Slack is not set up on this server ([notify.slack])",
                       code="slack_not_configured")
    raw = await request.body()
    if len(raw) > BODY_MAX:
        raise InvalidInput("the callback is too large", code="too_large")
    stamp = request.headers.get("x-slack-request-timestamp", "")
    signature = request.headers.get("x-slack-signature", "")
    if not stamp.isascii() or not stamp.isdigit() or abs(time.time() - int(stamp)) > WINDOW:
        raise Unauthenticated("the callback's timestamp is missing or more than five minutes "
                              "off", code="slack_stale")
    # Slack is set up, so its extra is installed (the channel needs it to start).
    from slack_sdk.signature import SignatureVerifier  # noqa: PLC0415

    if not SignatureVerifier(slack.config.signing_secret).is_valid(raw, stamp, signature):
        raise Unauthenticated("the callback's signature does not verify",
                              code="slack_signature_invalid")
    digest = hashlib.sha256(signature.encode()).hexdigest()

    def first_use() -> bool:
        return state.gate.first_use_of_signature(digest, at=time.time(), keep=2 * WINDOW)

    if not await run_in_threadpool(first_use):
        raise Conflict("this callback was already received", code="slack_replayed")
    interaction = read(_payload(raw))  # a shape Slack does not send: a typed 422
    if slack.config.team_id is not None and interaction.team != slack.config.team_id:
        raise Forbidden("the callback comes from another Slack workspace",
                        code="slack_wrong_team")
    reply = await run_in_threadpool(act, state.gate, slack.config, interaction)
    user = interaction.user
    channel = interaction.channel or slack.config.channel
    if reply.modal_for is not None:
        await run_in_threadpool(_quietly, lambda: slack.client.views_open(
            trigger_id=interaction.trigger_id, view=reject_view(reply.modal_for)))
    elif reply.message and user:
        await run_in_threadpool(_quietly, lambda: slack.client.chat_postEphemeral(
            channel=channel, user=user, text=reply.message))
    if reply.body is not None:
        return JSONResponse(reply.body)
    return JSONResponse({"ok": reply.code in ("decided", "recorded", "modal", "ignored"),
                         "code": reply.code})


def _payload(raw: bytes) -> dict[str, Any]:
    try:
        form = parse_qs(raw.decode("utf-8"), strict_parsing=True)
        payload = json.loads(form["payload"][0])
    except (UnicodeDecodeError, ValueError, KeyError, IndexError):
        raise InvalidInput("the callback carries no JSON payload",
                           code="invalid_payload") from None
    if not isinstance(payload, dict):
        raise InvalidInput("the callback's payload is not an object", code="invalid_payload")
    return payload


def _quietly(call: Any) -> None:
    """Tell the user; a failure to tell them must not undo what was decided."""
    try:
        call()
    except Exception:
        log.warning("slack: could not answer the user", exc_info=True)
