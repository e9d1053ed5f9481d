"""The policy of the bulk-approval tests (kernel and API): a shell tool, a two-vote deploy
for ops, a mandatory refund and a passkey signature."""

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
