"""``signoff doctor``: check a setup against the trust boundary, one line per check.

signoff can only keep a human hand on an agent whose tools cannot reach around it: the gate
and the agent's tools run as different OS users, and nothing the gate depends on lies
where the agent's user may change it. The doctor takes ``signoff serve``'s ``--policy`` and
``--db`` (same defaults) and the agent's OS user, and checks each part. Exit 0 when no
check fails (warnings allowed), 1 when one does, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from signoff.cli.access import OsUser
from signoff.cli.boundary import database_target, is_postgres, sqlite_path
from signoff.cli.checks import (
    FAIL,
    OK,
    WARN,
    Check,
    load_policy,
    permissions,
    policy_outside,
    postgres_reachable,
    review_key,
    sqlite_checks,
    users_apart,
)
from signoff.cli.common import DEFAULT_DB, refuse_url_typo
from signoff.errors import ConfigurationError

EXIT_FAILED = 1


def add_doctor(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor", help="check a setup against the trust boundary",
        description="Check that the policy loads and lies outside the workspace, that the "
        "database lies outside it (or PostgreSQL answers), that the gate and the agent's "
        "tools run as different OS users, that no other user may change the policy or the "
        "database, and that the auto reviewer has its key. One line per check: ok, warn or "
        "fail. Exit 0 when nothing fails, 1 otherwise. Run it as the user (and with the "
        "environment) `signoff serve` runs with.")
    doctor.add_argument("--policy", help="policy file (default: signoff.toml, as serve)")
    doctor.add_argument("--db", help=f"a SQLite file or postgresql:// URL (default: "
                        f"$SIGNOFF_DB or {DEFAULT_DB}, as serve)")
    doctor.add_argument("--agent-user", metavar="NAME",
                        help="the OS user (name or uid) the agent's tools run as")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.set_defaults(handler=cmd_doctor)


def run_checks(policy_path: str, db: str, gate: OsUser, agent: OsUser | None) -> list[Check]:
    config, loaded = load_policy(policy_path)
    checks = [loaded, policy_outside(policy_path, config)]
    if os.path.exists(policy_path):
        checks.append(permissions(
            "policy.permissions", [policy_path], agent, label=policy_path, secret=False,
            fix="chown it to the gate's user (or root), chmod 0644, in a directory only they "
            "may write, e.g. /etc/signoff"))
    else:
        checks.append(Check("policy.permissions", WARN, f"not checked: no file {policy_path}"))
    path = sqlite_path(db)  # None: PostgreSQL (cmd_doctor refused any other database)
    checks.extend(sqlite_checks(path, config, agent) if path is not None
                  else [postgres_reachable(db)])
    checks.append(users_apart(gate, agent))
    checks.append(review_key(config))
    return checks


def cmd_doctor(args: argparse.Namespace) -> int:
    db = database_target(args.db)
    refuse_url_typo(db)
    if not is_postgres(db) and sqlite_path(db) is None:
        shown = db.split("://", 1)[0] + "://…" if "://" in db else db
        raise ConfigurationError(
            f"--db {shown}: not a database signoff stores in: give a SQLite file path (or "
            "sqlite:///path) or a postgresql:// URL", code="unsupported_database")
    agent = OsUser.named(args.agent_user) if args.agent_user is not None else None
    gate = OsUser.current()
    policy_path = args.policy or "signoff.toml"
    checks = run_checks(policy_path, db, gate, agent)
    counts = {status: sum(c.status == status for c in checks) for status in (OK, WARN, FAIL)}
    if args.json:
        print(json.dumps({
            "ok": counts[FAIL] == 0, "counts": counts,
            "checks": [c.to_dict() for c in checks],
            "gate_user": {"name": gate.name, "uid": gate.uid},
            "agent_user": {"name": agent.name, "uid": agent.uid} if agent else None,
        }, indent=2, ensure_ascii=False))
    else:
        width = max(len(c.id) for c in checks)
        for check in checks:
            fix = f" — fix: {check.fix}" if check.fix and check.status != OK else ""
            print(f"{check.status:<4}  {check.id:<{width}}  {check.message}{fix}")
        print(f"{counts[OK]} ok, {counts[WARN]} warn, {counts[FAIL]} fail")
    return EXIT_FAILED if counts[FAIL] else 0
