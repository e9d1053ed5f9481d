"""The policy of the bulk-approval tests (kernel and API): a shell tool, a two-vote deploy
for ops, a mandatory refund and a passkey signature; and the people they act as."""

from __future__ import annotations

from signoff import Gate

# name, kind, roles: the agent, two ops approvers, an approver without a role
PEOPLE = [("bot", "agent", ()), ("ann", "approver", ("ops",)),
          ("bob", "approver", ("ops",)), ("cy", "approver", ())]


def add_people(gate: Gate) -> dict[str, str]:
    """``PEOPLE`` added to ``gate``: each name's token."""
    return {name: gate.add_user(name, kind=kind, roles=roles)[1]
            for name, kind, roles in PEOPLE}

POLICY = """
[policy]
version = "bulk-1"
gated = ["execute", "deploy", "refund", "sign"]
default_expires = "1h"

[tools.execute]
shell = "command"
[tools.deploy]
[tools.refund]
[tools.sign]

[[rules]]
id = "deploy-two"
effect = "ask"
tool = "deploy"
roles = ["ops"]
approvals = 2

[[rules]]
id = "refunds"
effect = "ask"
tool = "refund"
mandatory = true

[[rules]]
id = "signing"
effect = "ask"
tool = "sign"
signature = "passkey"
"""
