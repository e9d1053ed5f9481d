"""Managing webhooks: endpoints registered by admins, the delivery log, replays.

Shared by the CLI (``signoff webhooks``) and the admin API (``/api/v1/webhooks``).
Every change is an audit event in the same transaction as the change
(``webhook.added``, ``webhook.removed``, ``webhook.replayed``). A secret is
made here, returned once, and never shown again — not in lists, not in the
audit log.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from signoff.audit import to_us
from signoff.errors import Conflict, InvalidInput, NotFound
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
from signoff.store.base import Store
from signoff.store.deliveries import DEAD, DELIVERED, PENDING, StoredEndpoint

STATUSES = (PENDING, DELIVERED, DEAD)


def endpoints(store: Store, config: NotifyConfig) -> list[WebhookEndpoint]:
    """Every endpoint: the policy file's, then the registered ones (a file's name wins)."""
    seen = {e.name for e in config.webhooks}
    stored = [WebhookEndpoint(name=s.name, url=s.url, secret=s.secret, source="api",
                              filters=parse_filters(s.filters, s.name))
              for s in store.webhook_endpoints() if s.name not in seen]
    return [*config.webhooks, *stored]


def add_endpoint(store: Store, config: NotifyConfig, *, name: str, url: str, filters: Filters,
                 actor: str | None, now: float,
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
    # Sealed first: what was committed before this registration is under the head its
    # channel starts at (PostgreSQL numbers events when it seals them), so it is not told.
    store.seal()
    with store.transaction() as tx:
        if not tx.insert_endpoint(stored):
            raise Conflict(f"webhook {name!r} exists", code="webhook_exists")
        tx.start_channel_cursor(f"webhook:{name}")
        tx.append_audit("webhook.added", at_us=to_us(now), request_id=None, actor=actor,
                        data={"name": name, "url": url, **filters.to_dict()})
    return WebhookEndpoint(name=name, url=url, secret=secret, filters=filters,
                           source="api"), secret


def remove_endpoint(store: Store, config: NotifyConfig, name: str, *, actor: str | None,
                    now: float) -> None:
    if any(e.name == name for e in config.webhooks):
        raise Conflict(f"webhook {name!r} is defined in the policy file: remove it there",
                       code="webhook_in_policy")
    with store.transaction() as tx:
        if not tx.delete_endpoint(name):
            raise NotFound(f"no webhook {name!r}", code="webhook_not_found")
        tx.drop_channel_cursor(f"webhook:{name}")
        tx.append_audit("webhook.removed", at_us=to_us(now), request_id=None, actor=actor,
                        data={"name": name})


def replay(store: Store, *, actor: str | None, now: float, ids: Sequence[str] = (),
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
    with store.transaction() as tx:
        chosen = tx.replay_deliveries(now=now, ids=ids, channel=channel, status=status,
                                      after_index=after_index)
        if ids and len(chosen) < len(set(ids)):
            missing = sorted(set(ids) - set(chosen))
            raise NotFound(f"no delivery to replay: {missing[0]!r} (unknown, or pending "
                           "already)", code="delivery_not_found")
        if chosen:
            tx.append_audit("webhook.replayed", at_us=to_us(now), request_id=None, actor=actor,
                            data={"deliveries": len(chosen), "first": chosen[0],
                                  "channel": channel, "status": status})
    return chosen
