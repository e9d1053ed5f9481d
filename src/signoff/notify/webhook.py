"""A webhook endpoint as a channel: the payload POSTed, signed per Standard Webhooks.

Each attempt is signed afresh (``webhook-timestamp`` is the attempt's time, so a
receiver's replay window holds for retries too) with the same ``webhook-id``:
the event's id, which a receiver uses to drop a delivery it already has.
Redirects are not followed: a 3xx is a failed attempt, so an endpoint can't
forward a signed payload somewhere it was not configured to go.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from standardwebhooks.webhooks import Webhook

from signoff import __version__
from signoff.model import ApprovalRequest
from signoff.notify.channels import Attempt, OneByOne
from signoff.notify.config import WebhookEndpoint
from signoff.store.deliveries import Delivery

_ERROR_MAX = 500


def signed_headers(secret: str, event_id: str, body: str,
                   at: datetime | None = None) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body``."""
    at = at or datetime.now(UTC)
    return {"webhook-id": event_id, "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": Webhook(secret).sign(event_id, at, body)}


class WebhookChannel(OneByOne):
    def __init__(self, endpoint: WebhookEndpoint, client: httpx.Client) -> None:
        self.endpoint = endpoint
        self.client = client

    @property
    def channel(self) -> str:
        return self.endpoint.channel

    def wants(self, event_type: str, request: ApprovalRequest) -> bool:
        return self.endpoint.filters.wants(event_type, risk=request.risk.value,
                                           tool=request.tool, thread_id=request.thread_id)

    def send(self, delivery: Delivery) -> Attempt:
        headers = signed_headers(self.endpoint.secret, delivery.event_id, delivery.payload)
        headers.update({"content-type": "application/json",
                        "user-agent": f"signoff/{__version__}"})
        try:
            response = self.client.post(self.endpoint.url, content=delivery.payload.encode(),
                                        headers=headers)
        except httpx.HTTPError as exc:
            return Attempt(ok=False, error=f"{type(exc).__name__}: {exc}"[:_ERROR_MAX])
        if 200 <= response.status_code < 300:
            return Attempt(ok=True, status=response.status_code)
        return Attempt(ok=False, status=response.status_code,
                       error=f"HTTP {response.status_code}: {response.text[:200]}"[:_ERROR_MAX])
