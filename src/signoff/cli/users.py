"""``signoff users``: identities and their lifecycle, straight on the database.

Whoever can open the database may manage users, so these commands need no
token; each change is audited with the actor ``os:<user>`` (the operating
system's user who ran it). Tokens and login links are printed once, to stdout,
never put on a command line.
"""

from __future__ import annotations

import argparse
from typing import Any

from signoff.cli.common import emit, leaf, open_gate
from signoff.identity import Account, IdentityKind, Session, parse_roles
from signoff.kernel.accounts import expiry, os_actor
from signoff.kernel.gate import Gate
from signoff.kernel.sessions import login_url
from signoff.times import shown

EXPIRES_HELP = "the token stops working after this long: 90d, 12h, 30m (default: never)"


def add_users(commands: Any) -> None:
    users = commands.add_parser(
        "users", help="manage approver, admin and agent identities",
        description="Identities that may decide (or, for agents, propose and wait), their "
        "tokens and their inbox sessions. Every change is audited.")
    sub = users.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    add = leaf(sub, "add", "add an identity; prints its token once", cmd_add)
    add.add_argument("name", help="the identity's name")
    add.add_argument("--roles", default="", help="comma-separated roles, e.g. ops,security")
    add.add_argument("--kind", choices=[k.value for k in IdentityKind], default="approver",
                     help="approver (decides in the inbox, CLI or API; the default), admin "
                     "(also manages identities) or agent (proposes calls and waits for them; "
                     "decides nothing, sees only its own calls)")
    add.add_argument("--expires", help=EXPIRES_HELP)
    listing = leaf(sub, "list", "list identities with their status and live sessions",
                   cmd_list)
    listing.add_argument("--all", action="store_true", help="include removed users")
    for name, text, handler in (
            ("disable", "disable: its token and sessions stop working at once", cmd_disable),
            ("enable", "enable a disabled identity (its old sessions stay ended)", cmd_enable),
            ("remove", "remove for good: token and sessions end, the name stays reserved "
             "and past decisions and audit stay readable", cmd_remove),
            ("sessions", "list an identity's live inbox sessions", cmd_sessions)):
        leaf(sub, name, text, handler).add_argument("name", help="the identity's name")
    rotate = leaf(sub, "rotate", "issue a new token (printed once); the old one and the "
                  "sessions end", cmd_rotate)
    rotate.add_argument("name", help="the identity's name")
    rotate.add_argument("--expires", help=EXPIRES_HELP)
    roles = leaf(sub, "roles", "replace an identity's roles", cmd_roles)
    roles.add_argument("name", help="the identity's name")
    roles.add_argument("roles", help="comma-separated roles; '' for none")
    login = leaf(sub, "login", "print a one-time login link for the inbox (works once, "
                 "within login_link_ttl)", cmd_login)
    login.add_argument("name", help="the identity's name")
    login.add_argument("--url", help="the server's public URL (default: --public-url's "
                       "sources: $SIGNOFF_PUBLIC_URL, [server] public_url, host and port)")
    revoke = leaf(sub, "revoke", "end one inbox session, or all of an identity's", cmd_revoke)
    revoke.add_argument("name", help="the identity's name")
    which = revoke.add_mutually_exclusive_group(required=True)
    which.add_argument("session_id", nargs="?", help="the session (from `users sessions`)")
    which.add_argument("--all", action="store_true", help="every session of the identity")
    leaf(sub, "passkeys", "list an identity's passkeys (registered in the inbox's settings)",
         cmd_passkeys).add_argument("name", help="the identity's name")
    remove_key = leaf(sub, "remove-passkey", "remove one of an identity's passkeys: the "
                      "approvals it signed and that have not run yet will not run",
                      cmd_remove_passkey)
    remove_key.add_argument("name", help="the identity's name")
    remove_key.add_argument("id", help="the passkey's id (from `users passkeys`; after `--` "
                            "when it begins with -)")


def _when(at: float | None) -> str:
    return "never" if at is None else shown(at)


def _account(account: Account, now: float, sessions: list[Session]) -> dict[str, Any]:
    return {**account.to_dict(now), "sessions": [s.to_dict() for s in sessions]}


def cmd_add(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    identity, token = gate.add_user(args.name, roles=parse_roles(args.roles), kind=args.kind,
                                    expires_in=expiry(args.expires), actor=os_actor())
    account = gate.user(identity.name)
    emit(args, {**account.to_dict(gate.clock()), "token": token},
         f"added {identity.kind.value} {identity.name}"
         + (f" with roles {', '.join(identity.roles)}" if identity.roles else "")
         + (f", token expires {_when(account.token_expires_at)}"
            if account.token_expires_at else "")
         + f"\ntoken (shown once; only its hash is stored): {token}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    now = gate.clock()
    live = gate.live_sessions()
    accounts = gate.users(removed=args.all)
    rows = [f"{'NAME':<20} {'KIND':<9} {'STATUS':<14} {'SESSIONS':>8}  {'TOKEN EXPIRES':<20}  "
            "ROLES"]
    rows += [f"{a.name:<20} {a.identity.kind.value:<9} {a.status(now):<14} "
             f"{len(live.get(a.name, [])):>8}  {_when(a.token_expires_at):<20}  "
             f"{','.join(a.identity.roles) or '-'}" for a in accounts]
    emit(args, [_account(a, now, live.get(a.name, [])) for a in accounts],
         "\n".join(rows) if accounts else "no users")
    return 0


def _changed(args: argparse.Namespace, gate: Gate, result: tuple[Account, bool],
             verb: str) -> int:
    account, changed = result
    text = f"{verb} {account.name}" if changed else f"{account.name} was already {verb}"
    emit(args, {**account.to_dict(gate.clock()), "changed": changed}, text)
    return 0


def cmd_disable(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    return _changed(args, gate, gate.disable_user(args.name, actor=os_actor()), "disabled")


def cmd_enable(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    return _changed(args, gate, gate.enable_user(args.name, actor=os_actor()), "enabled")


def cmd_remove(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    account = gate.remove_user(args.name, actor=os_actor())
    emit(args, account.to_dict(gate.clock()),
         f"removed {account.name}; its decisions and audit events stay, and the name is "
         "not given to anyone else")
    return 0


def cmd_rotate(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    account, token = gate.rotate_token(args.name, expires_in=expiry(args.expires),
                                       actor=os_actor())
    emit(args, {**account.to_dict(gate.clock()), "token": token},
         f"new token for {account.name}; the old one and its sessions no longer work"
         + (f"; expires {_when(account.token_expires_at)}" if account.token_expires_at
            else "") + f"\ntoken (shown once; only its hash is stored): {token}")
    return 0


def cmd_roles(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    account = gate.set_roles(args.name, parse_roles(args.roles), actor=os_actor())
    roles = account.identity.roles
    emit(args, account.to_dict(gate.clock()),
         f"{account.name} now has roles {', '.join(roles)}" if roles
         else f"{account.name} now has no roles")
    return 0


def cmd_login(args: argparse.Namespace) -> int:
    from signoff.server.settings import load_settings  # noqa: PLC0415 (server settings)

    settings = load_settings(policy_path=args.policy or "signoff.toml", public_url=args.url)
    gate = open_gate(args)
    code, expires_at = gate.mint_login_link(args.name, ttl=settings.limits.link_ttl,
                                            actor=os_actor())
    url = login_url(settings.base_url, code)
    emit(args, {"user": args.name, "url": url, "expires_at": expires_at},
         f"login link for {args.name} (works once, until {_when(expires_at)}):\n    {url}")
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    found = gate.sessions(args.name)
    rows = [f"{s.id}  via {s.via:<5}  started {_when(s.created_at)}  last seen "
            f"{_when(s.last_seen)}  ends by {_when(s.ends_at())}" for s in found]
    emit(args, [s.to_dict() for s in found],
         "\n".join(rows) or f"{args.name} has no live sessions")
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    gate = open_gate(args)
    ended = gate.revoke_sessions(args.name, session_id=None if args.all else args.session_id,
                                 actor=os_actor())
    emit(args, [s.to_dict() for s in ended],
         f"ended {len(ended)} session(s) of {args.name}")
    return 0


def cmd_passkeys(args: argparse.Namespace) -> int:
    found = open_gate(args).passkeys.passkeys(args.name)
    rows = [f"{p.id}  {p.name!r}  for {p.origin}  added {_when(p.created_at)}  last used "
            f"{_when(p.last_used_at)}" for p in found]
    emit(args, [p.to_dict() for p in found],
         "\n".join(rows) or f"{args.name} has no passkeys")
    return 0


def cmd_remove_passkey(args: argparse.Namespace) -> int:
    removed = open_gate(args).passkeys.remove(args.name, args.id, actor=os_actor())
    emit(args, removed.to_dict(), f"removed passkey {removed.name!r} of {args.name}")
    return 0
