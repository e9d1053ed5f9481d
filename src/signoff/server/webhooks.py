"""``/api/v1/webhooks``: endpoints, the delivery log and replays, for admins only.

The same operations as ``signoff webhooks`` (``signoff.notify.webhook_admin``), audited
with the admin as actor. A registered endpoint's secret is in the answer that
registers it, once; the policy file's endpoints are listed but not changed here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from signoff.notify import webhook_admin
from signoff.notify.config import Filters, NotifyConfig
from signoff.server.auth import admin_of
from signoff.server.bodies import body_doc, read_body
from signoff.server.schemas import Identifier, Strict
from signoff.server.state import AppState

router = APIRouter(prefix="/webhooks", tags=["webhooks"])
EventType = Literal["request.created", "request.decided", "request.expired",
                    "request.cancelled", "request.invalidated", "request.executed",
                    "request.failed", "request.unknown", "request.reminder",
                    "request.escalated", "request.edited"]
RiskName = Literal["low", "medium", "high", "critical"]
Pattern = Annotated[str, Field(min_length=1, max_length=200, pattern="^[^\\x00]*$")]
EndpointName = Annotated[str, Field(min_length=1, max_length=64,
                                    pattern="^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
ChannelName = Annotated[str, Field(min_length=1, max_length=80,
                                   pattern="^(slack|(webhook|email):[A-Za-z0-9][A-Za-z0-9_.-]{0,63})$")]
DeliveryStatus = Literal["pending", "delivered", "dead"]


class WebhookIn(Strict):
    name: EndpointName
    url: str = Field(min_length=8, max_length=2000, pattern="^https?://[^\\s\\x00]+$")
    events: list[EventType] = Field(default_factory=list, max_length=20,
                                    description="what it is told (empty: every event)")
    risks: list[RiskName] = Field(default_factory=list, max_length=4)
    tools: list[Pattern] = Field(default_factory=list, max_length=50,
                                 description="glob patterns on the tool's name")
    threads: list[Pattern] = Field(default_factory=list, max_length=50,
                                   description="glob patterns on the thread id")


class WebhookOut(BaseModel):
    name: str
    url: str
    source: Literal["config", "api"]
    channel: str
    events: list[str]
    risks: list[str]
    tools: list[str]
    threads: list[str]
    secret: str | None = Field(None, description="only when just registered: shown once")


class WebhookList(BaseModel):
    webhooks: list[WebhookOut]


class DeliveryOut(BaseModel):
    id: str
    event_id: str = Field(description="the webhook-id: the same on every attempt")
    channel: str
    event_index: int
    type: str
    request_id: str | None
    status: DeliveryStatus
    attempts: int
    next_at: float
    event_at: float
    created_at: float
    delivered_at: float | None
    last_status: int | None
    last_error: str | None


class DeliveryList(BaseModel):
    deliveries: list[DeliveryOut]
    next_before: int | None = Field(None, description="pass as `before` for the next page")


class ReplayIn(Strict):
    ids: list[Annotated[str, Field(min_length=1, max_length=300,
                                   pattern="^[^\\x00]*$")]] = Field(default_factory=list,
                                                                      max_length=1000)
    endpoint: EndpointName | None = None
    channel: ChannelName | None = None
    status: Literal["delivered", "dead"] | None = None
    after_index: int | None = Field(None, ge=0, le=2**62, strict=True)


class Replayed(BaseModel):
    replayed: list[str]


async def _admin(request: Request) -> tuple[AppState, str]:
    state, identity = await admin_of(request)
    return state, identity.name


def _config(state: AppState) -> NotifyConfig:
    return state.notifier.config if state.notifier is not None else NotifyConfig()


@router.get("", response_model=WebhookList, summary="Webhook endpoints (admins only)")
async def list_webhooks(request: Request) -> Any:
    state, _ = await _admin(request)
    found = await run_in_threadpool(webhook_admin.endpoints, state.gate, _config(state))
    return {"webhooks": [e.to_dict() for e in found]}


@router.post("", response_model=WebhookOut, status_code=201, openapi_extra=body_doc(WebhookIn),
             summary="Register an endpoint; the answer holds its secret, once")
async def add_webhook(request: Request) -> Any:
    state, actor = await _admin(request)
    body = await read_body(request, WebhookIn)
    filters = Filters(events=tuple(body.events), risks=tuple(body.risks),
                      tools=tuple(body.tools), threads=tuple(body.threads))

    def add() -> dict[str, Any]:
        endpoint, secret = webhook_admin.add_endpoint(state.gate, _config(state), name=body.name,
                                              url=body.url, filters=filters, actor=actor,
                                              now=state.gate.clock(),
                                              own=state.settings.host_names())
        return {**endpoint.to_dict(), "secret": secret}

    added = await run_in_threadpool(add)
    if state.notifier is not None:
        state.notifier.wake()
    return added


@router.delete("/{name}", status_code=204, response_class=Response,
               summary="Remove a registered endpoint (its delivery log stays)")
async def remove_webhook(request: Request,
                         name: Annotated[Identifier, Path(description="the endpoint")]
                         ) -> Response:
    state, actor = await _admin(request)
    await run_in_threadpool(lambda: webhook_admin.remove_endpoint(
        state.gate, _config(state), name, actor=actor, now=state.gate.clock()))
    return Response(status_code=204)


@router.get("/deliveries", response_model=DeliveryList,
            summary="The delivery log, newest event first")
async def deliveries(
        request: Request, *,
        endpoint: Annotated[EndpointName | None, Query()] = None,
        channel: Annotated[ChannelName | None, Query(
            description="slack, email:NAME or webhook:NAME")] = None,
        status: Annotated[DeliveryStatus | None, Query()] = None,
        request_id: Annotated[Identifier | None, Query()] = None,
        before: Annotated[int | None, Query(ge=0, le=2**62)] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 100) -> Any:
    state, _ = await _admin(request)
    if endpoint is not None:
        channel = f"webhook:{endpoint}"
    found = await run_in_threadpool(lambda: state.gate.deliveries(
        channel=channel, status=status, request_id=request_id, before_index=before,
        limit=limit + 1))
    page, next_before = found[:limit], None
    if len(found) > limit:
        if found[limit].event_index == page[-1].event_index:  # an event split over pages:
            page = [d for d in page if d.event_index != page[-1].event_index] or page
        next_before = page[-1].event_index  # (its channels all on this page)
    return {"deliveries": [d.to_dict() for d in page], "next_before": next_before}


@router.post("/deliveries/replay", response_model=Replayed, openapi_extra=body_doc(ReplayIn),
             summary="Send deliveries again, with the same ids (dead ones, or any)")
async def replay(request: Request) -> Any:
    state, actor = await _admin(request)
    body = await read_body(request, ReplayIn)
    chosen = await run_in_threadpool(lambda: webhook_admin.replay(
        state.gate, actor=actor, now=state.gate.clock(), ids=body.ids,
        endpoint=body.endpoint, channel=body.channel, status=body.status,
        after_index=body.after_index))
    if state.notifier is not None:
        state.notifier.wake()
    return {"replayed": chosen}
