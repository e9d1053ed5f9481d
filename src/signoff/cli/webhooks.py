"""``signoff webhooks``: endpoints, the delivery log and replays, straight on the database.

Like ``signoff users``: whoever can open the database may manage webhooks, and
each change is audited with the actor ``os:<user>``. A registered endpoint's
secret is printed once. The policy file's ``[notify.webhooks.*]`` are listed
here but changed in the file. A replay is sent by the running servers (the
next pass of their notifiers), with the same ``webhook-id`` as before.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from signoff.cli.common import emit, leaf, open_gate
from signoff.kernel.accounts import os_actor
from signoff.notify import webhook_admin
from signoff.notify.config import EVENT_TYPES, NotifyConfig, load_notify, parse_filters
from signoff.times import shown


def add_webhooks(commands: Any) -> None:
    hooks = commands.add_parser(
        "webhooks", help="webhook endpoints, their deliveries, replays",
        description="Endpoints that receive request events signed per Standard Webhooks "
        "(docs/notifications.md), the delivery log, and replays of dead or past deliveries. "
        "Every change is audited.")
    sub = hooks.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    leaf(sub, "list", "list endpoints: the policy file's and the registered ones", cmd_list)
    add = leaf(sub, "add", "register an endpoint; prints its secret once", cmd_add)
    add.add_argument("name", help="the endpoint's name (events and the delivery log use it)")
    add.add_argument("--url", required=True, help="where events are POSTed (http or https); "
                     "loopback, private and link-local targets are refused unless [notify] "
                     "allow_private_targets = true")
    add.add_argument("--events", default="", help=f"comma-separated, of: "
                     f"{', '.join(EVENT_TYPES)} (default: all)")
    add.add_argument("--risks", default="", help="comma-separated risks (default: all)")
    add.add_argument("--tools", default="", help="comma-separated glob patterns of tools")
    add.add_argument("--threads", default="", help="comma-separated glob patterns of threads")
    leaf(sub, "remove", "remove a registered endpoint (its delivery log stays)",
         cmd_remove).add_argument("name", help="the endpoint's name")
    log = leaf(sub, "deliveries", "the delivery log, newest event first", cmd_deliveries)
    which = log.add_mutually_exclusive_group()
    which.add_argument("--endpoint", help="one webhook endpoint's deliveries")
    which.add_argument("--channel", help="one channel's: slack, email:NAME, webhook:NAME")
    log.add_argument("--status", choices=webhook_admin.STATUSES,
                     help="only deliveries in this state: pending (waiting or retrying), "
                     "delivered, or dead (gave up; replay sends them again)")
    log.add_argument("--request", help="one request's deliveries")
    log.add_argument("--limit", type=int, default=50, help="at most this many (50)")
    replay = leaf(sub, "replay", "send deliveries again, with their ids: the ones named, or "
                  "those the options choose", cmd_replay)
    replay.add_argument("ids", nargs="*", help="delivery ids (from `webhooks deliveries`)")
    only = replay.add_mutually_exclusive_group()
    only.add_argument("--endpoint", help="only this webhook endpoint's")
    only.add_argument("--channel", help="only this channel's: slack, email:NAME, webhook:NAME")
    replay.add_argument("--dead", action="store_true", help="only dead deliveries")
    replay.add_argument("--since-event", type=int, metavar="INDEX",
                        help="only events after this audit index (e.g. since an outage)")


def _config(args: argparse.Namespace) -> NotifyConfig:
    path = args.policy or ("signoff.toml" if Path("signoff.toml").exists() else None)
    return load_notify(path, read_secrets=False)


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _when(at: float | None) -> str:
    return "-" if at is None else shown(at, seconds=True)


def cmd_list(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    found = webhook_admin.endpoints(gate, _config(args))
    rows = [f"{'NAME':<20} {'SOURCE':<7} {'URL':<40} EVENTS"]
    rows += [f"{e.name:<20} {e.source:<7} {e.url:<40} {','.join(e.filters.events) or 'all'}"
             for e in found]
    emit(args, [e.to_dict() for e in found], "\n".join(rows) if found else "no webhooks")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    filters = parse_filters({"events": _list(args.events), "risks": _list(args.risks),
                             "tools": _list(args.tools), "threads": _list(args.threads)},
                            "signoff webhooks add")
    endpoint, secret = webhook_admin.add_endpoint(gate, _config(args), name=args.name,
                                          url=args.url, filters=filters, actor=os_actor(),
                                          now=gate.clock())
    emit(args, {**endpoint.to_dict(), "secret": secret},
         f"added webhook {endpoint.name} → {endpoint.url}\nsecret (shown once; the "
         f"receiver verifies signatures with it): {secret}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    webhook_admin.remove_endpoint(gate, _config(args), args.name, actor=os_actor(),
                          now=gate.clock())
    emit(args, {"removed": args.name}, f"removed webhook {args.name}")
    return 0


def cmd_deliveries(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    channel = f"webhook:{args.endpoint}" if args.endpoint else args.channel
    found = gate.deliveries(channel=channel, status=args.status,
                            request_id=args.request, limit=max(1, args.limit))
    rows = [f"{'ID':<36} {'TYPE':<20} {'STATUS':<9} {'TRIES':>5}  {'DELIVERED':<23}  LAST"]
    rows += [f"{d.id:<36} {d.event_type:<20} {d.status:<9} {d.attempts:>5}  "
             f"{_when(d.delivered_at):<23}  {d.last_error or d.last_status or '-'}"
             for d in found]
    emit(args, [d.to_dict() for d in found], "\n".join(rows) if found else "no deliveries")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    chosen = webhook_admin.replay(gate, actor=os_actor(), now=gate.clock(), ids=args.ids,
                          endpoint=args.endpoint, channel=args.channel,
                          status="dead" if args.dead else None,
                          after_index=args.since_event)
    emit(args, {"replayed": chosen},
         f"{len(chosen)} deliver{'y' if len(chosen) == 1 else 'ies'} to send again"
         + ("" if chosen else " (nothing matched)"))
    return 0
