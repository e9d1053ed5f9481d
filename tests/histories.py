"""A known approval history, built through a real gate: what the insights tests count."""

from __future__ import annotations

from typing import Any

from signoff.kernel.gate import Gate
from signoff.model import Decision, RequestStatus, ReviewMode, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store

T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC
DAY = 86_400.0
POLICY = """
[policy]
version = "insights-1"
gated = ["execute", "deploy"]
unknown_tools = "ask"

[tools.execute]
shell = "command"
[tools.deploy]

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "allow-ls"
effect = "allow"
tool = "execute"
command = "ls *"

[[rules]]
id = "ask-push"
effect = "ask"
tool = "execute"
command = "git push *"

[[rules]]
id = "deploy-prod"
effect = "ask"
mandatory = true
tool = "deploy"
roles = ["ops"]

[[rules]]
id = "never-used"
effect = "ask"
tool = "execute"
command = "terraform apply *"
"""


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def history(store: Store) -> Gate:
    """Two threads over two days: every way an ask ends, an allowed and a denied call."""
    clock = Clock()
    gate = Gate(Policy.from_toml(POLICY, source="insights.toml"), store, clock=clock,
                verdict_audit="sync")
    ann, _ = gate.add_user("ann", roles=["ops"])

    def ask(thread: str, call: str, tool: str, args: dict[str, Any]) -> str:
        proposal = gate.propose(ToolCall(id=call, name=tool, args=args),
                                RunContext(thread_id=thread, principal="bot"))
        assert proposal.request is not None, (tool, args)
        return proposal.request.id

    def decide(request_id: str, decision: Decision, at: float) -> None:
        clock.now = at
        gate.decide(request_id, decision, identity=ann)

    push = ask("t1", "c1", "execute", {"command": "git push origin"})
    clock.now = T0 + 1
    make = ask("t1", "c2", "execute", {"command": "make"})
    clock.now = T0 + 2
    deploy = ask("t1", "c3", "deploy", {"env": "prod"})
    clock.now = T0 + 3
    gate.propose(ToolCall(id="c3a", name="execute", args={"command": "ls -la"}),
                 RunContext(thread_id="t1", principal="bot"))
    gate.propose(ToolCall(id="c3b", name="execute", args={"command": "rm -rf build"}),
                 RunContext(thread_id="t1", principal="bot"))
    decide(push, Decision.approve(), T0 + 10)
    decide(make, Decision.reject("not now"), T0 + 31)
    decide(deploy, Decision.edit({"env": "staging"}, reason="staging first"), T0 + 62)
    clock.now = T0 + DAY
    again = ask("t2", "c4", "execute", {"command": "git push origin"})
    clock.now = T0 + DAY + 1
    late = ask("t2", "c5", "execute", {"command": "make x"})
    clock.now = T0 + DAY + 2
    ask("t2", "c6", "send_mail", {"to": "x@example.com"})
    decide(again, Decision.respond("use the staging remote"), T0 + DAY + 100)
    clock.now = T0 + 3 * DAY
    assert gate.request(late).status is RequestStatus.PENDING
    gate.outcome(late)  # read past its expiry: expired, unanswered
    assert gate.request(late).status is RequestStatus.EXPIRED
    return gate


# ---- a history rule suggestions learn from (policy/suggest.py, server/suggestions.py) ----------

# Approved shell commands the starter policy asks about: an exact `python` rule and a
# `make` rule whose command is markup (a page must show it as text).
APPROVED = ["python a.py", "python b.py", "python c.py", "python a.py",
            "make '<script>alert(1)</script>'", "make '<script>alert(1)</script>'"]
REFUSED = "python drop_db.py"


def suggestible(gate: Gate) -> dict[str, str]:
    """Approvals, a rejection, an edit and a response by ``alice`` (a user of ``gate``) of
    ``bot``'s ``execute`` calls, each through the gate; the request ids by command (the
    last, for a command asked twice)."""
    ids: dict[str, str] = {}
    alice = gate.identity_of("alice")
    assert alice is not None, "add the user alice first"

    def ask(n: int, command: str) -> str:
        proposal = gate.propose(ToolCall(id=f"h{n}", name="execute", args={"command": command}),
                                RunContext(thread_id="t-history", principal="bot",
                                           review_mode=ReviewMode.MANUAL))
        assert proposal.request is not None, command
        ids[command] = proposal.request.id
        return proposal.request.id

    for n, command in enumerate(APPROVED):
        gate.decide(ask(n, command), Decision.approve(), identity=alice)
    gate.decide(ask(20, REFUSED), Decision.reject("never"), identity=alice)
    gate.decide(ask(21, "python e.py"), Decision.edit({"command": "python f.py"}),
                identity=alice)
    gate.decide(ask(22, "python g.py"), Decision.respond("use the tests"), identity=alice)
    return ids
