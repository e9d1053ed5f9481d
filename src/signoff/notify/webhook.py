"""A webhook endpoint as a channel: the payload POSTed, signed per Standard Webhooks.

Each attempt is signed afresh (``webhook-timestamp`` is the attempt's time, so a
receiver's replay window holds for retries too) with the same ``webhook-id``:
the event's id, which a receiver uses to drop a delivery it already has.
Redirects are not followed: a 3xx is a failed attempt, so an endpoint can't
forward a signed payload somewhere it was not configured to go. Each attempt connects
only to an address the target check passed (``signoff.notify.targets``). Of what a
receiver answers, the delivery log keeps the status and a short excerpt with control
characters escaped: a receiver's body is its own text, not the log's.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from standardwebhooks.webhooks import Webhook

from signoff import __version__
from signoff.model import ApprovalRequest
from signoff.notify.channels import Attempt, OneByOne
from signoff.notify.config import WebhookEndpoint
from signoff.notify.targets import TargetRefused, Targets
from signoff.store.deliveries import Delivery

_ERROR_MAX = 500
EXCERPT = 200  # characters of a receiver's answer the delivery log keeps
_READ = 4096  # bytes of it read at most


def signed_headers(secret: str, event_id: str, body: str,
                   at: datetime | None = None) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body``."""
    at = at or datetime.now(UTC)
    return {"webhook-id": event_id, "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": Webhook(secret).sign(event_id, at, body)}


def excerpt(body: bytes) -> str:
    """At most ``EXCERPT`` characters of ``body``, with control and invisible characters
    written as escapes (a log line stays one line, and says what it holds)."""
    text = body.decode("utf-8", "replace")
    shown = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                    for ch in text[: EXCERPT + 1])
    return shown if len(shown) <= EXCERPT else shown[: EXCERPT - 1] + "…"


class WebhookChannel(OneByOne):
    def __init__(self, endpoint: WebhookEndpoint, client: httpx.Client,
                 targets: Targets | None = None) -> None:
        self.endpoint = endpoint
        self.client = client
        self.targets = targets or Targets()

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
            pinned = self.targets.pin(self.endpoint.url)
        except TargetRefused as exc:  # nothing was sent; a later attempt resolves again
            return Attempt(ok=False, error=f"{exc.code}: {exc.message}"[:_ERROR_MAX])
        # The name the URL gave, as Host; the body raw (an excerpt needs no decompressing).
        headers.update({"host": pinned.host_header, "accept-encoding": "identity"})
        try:
            with self.client.stream("POST", pinned.url, content=delivery.payload.encode(),
                                    headers=headers,
                                    extensions={"sni_hostname": pinned.server_name}
                                    ) as response:
                status = response.status_code
                # Read at most ``_READ`` bytes: a short answer read whole leaves the
                # connection reusable (keep-alive), a longer one is cut and its connection
                # closed.
                body = b""
                for chunk in response.iter_raw():
                    body += chunk
                    if len(body) >= _READ:
                        break
                if 200 <= status < 300:
                    return Attempt(ok=True, status=status)
        except httpx.HTTPError as exc:
            return Attempt(ok=False, error=excerpt(f"{type(exc).__name__}: {exc}".encode()))
        return Attempt(ok=False, status=status, error=f"HTTP {status}: {excerpt(body)}")
