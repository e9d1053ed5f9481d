"""Managing webhooks: endpoints registered by admins, the delivery log, replays.

Shared by the CLI (``signoff webhooks``) and the admin API (``/api/v1/webhooks``).
Every change is an audit event in the same transaction as the change
(``webhook.added``, ``webhook.removed``, ``webhook.replayed``), written by the kernel
(``signoff.kernel.webhooks``: the gate, or ``Webhooks`` over a store). A secret is
made here, returned once, and never shown again — not in lists, not in the
audit log.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from signoff.errors import Conflict, InvalidInput
from signoff.notify.config import (
    Filters,
    NotifyConfig,
    WebhookEndpoint,
    check_name,
    check_url,
    new_secret,
    parse_filters,
)
from signoff.notify.targets import check_url as check_target
from signoff.store.deliveries import DEAD, DELIVERED, PENDING, StoredEndpoint

STATUSES = (PENDING, DELIVERED, DEAD)


class Endpoints(Protocol):
    """Where registered endpoints are read: a store, a gate, the kernel's ``Webhooks``."""

    def webhook_endpoints(self) -> list[StoredEndpoint]: ...


class WebhookDesk(Endpoints, Protocol):
    """Where they are changed: the gate, or the kernel's ``Webhooks`` over a store."""

    def add_webhook(self, endpoint: StoredEndpoint, *, data: Mapping[str, Any],
                    actor: str | None, now: float) -> None: ...

    def remove_webhook(self, name: str, *, actor: str | None, now: float) -> None: ...

    def replay_deliveries(self, *, actor: str | None, now: float, ids: Sequence[str],
                          channel: str | None, status: str | None,
                          after_index: int | None) -> list[str]: ...


def endpoints(source: Endpoints, config: NotifyConfig) -> list[WebhookEndpoint]:
    """Every endpoint: the policy file's, then the registered ones (a file's name wins)."""
    seen = {e.name for e in config.webhooks}
    stored = [WebhookEndpoint(name=s.name, url=s.url, secret=s.secret, source="api",
                              filters=parse_filters(s.filters, s.name))
              for s in source.webhook_endpoints() if s.name not in seen]
    return [*config.webhooks, *stored]


def add_endpoint(desk: WebhookDesk, config: NotifyConfig, *, name: str, url: str,
                 filters: Filters, actor: str | None, now: float,
                 own: Collection[str] = ()) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; returns it and its new secret (shown this once). A target in
    the server's own network is refused unless the config allows it (``own``: this
    server's names; ``signoff.notify.targets``)."""
    check_name(name, "webhook")
    check_url(url, "webhook")
    check_target(url, allow_private=config.allow_private_targets, own=own)
    if any(e.name == name for e in config.webhooks):
        raise Conflict(f"webhook {name!r} is defined in the policy file", code="webhook_exists")
    secret = new_secret()
    stored = StoredEndpoint(name=name, url=url, secret=secret, filters=filters.to_dict(),
                            created_at=now, created_by=actor)
    desk.add_webhook(stored, data={"name": name, "url": url, **filters.to_dict()},
                     actor=actor, now=now)
    return WebhookEndpoint(name=name, url=url, secret=secret, filters=filters,
                           source="api"), secret


def remove_endpoint(desk: WebhookDesk, config: NotifyConfig, name: str, *,
                    actor: str | None, now: float) -> None:
    if any(e.name == name for e in config.webhooks):
        raise Conflict(f"webhook {name!r} is defined in the policy file: remove it there",
                       code="webhook_in_policy")
    desk.remove_webhook(name, actor=actor, now=now)


def replay(desk: WebhookDesk, *, actor: str | None, now: float, ids: Sequence[str] = (),
           endpoint: str | None = None, channel: str | None = None,
           status: str | None = None, after_index: int | None = None) -> list[str]:
    """Make deliveries pending and due now (see ``DeliveryRows.replay_deliveries``); at
    least one of ``ids``, ``endpoint`` (a webhook's name), ``channel`` (``slack``,
    ``email:NAME``, …), ``status`` or ``after_index`` must choose them."""
    if endpoint is not None:
        channel = f"webhook:{endpoint}"
    if not ids and channel is None and status is None and after_index is None:
        raise InvalidInput("say which deliveries to replay: ids, an endpoint, a status or "
                           "an event index", code="replay_unscoped")
    if status is not None and status not in (DELIVERED, DEAD):
        raise InvalidInput(f"status {status!r}: replay delivered or dead deliveries",
                           code="invalid_status")
    return desk.replay_deliveries(actor=actor, now=now, ids=ids, channel=channel,
                                  status=status, after_index=after_index)
