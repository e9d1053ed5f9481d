"""``Gate.propose_now``: ``propose`` answered from memory alone — a quick allowed verdict with
the thread's memory remembered — or ``None`` with nothing done. Its verdict and audit event
are ``propose``'s own (the MCP proxy decides allowed calls with it on its event loop)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from signoff import Decision, Gate, Policy, ToolCall
from signoff.kernel.outcomes import Proposal, ProposalKind
from signoff.model import ReviewMode, RunContext
from signoff.store.base import Store

POLICY = """
[policy]
version = "now-1"
gated = ["deploy"]
unknown_tools = "ask"
[workspace]
name = "ws"
root = "{root}"
[tools.lookup]
[tools.read_file]
paths = ["path"]
[tools.deploy]
"""
GATED = POLICY.replace('gated = ["deploy"]', 'gated = ["deploy", "lookup"]')
CTX = RunContext(thread_id="t-now", run_id="r-1")


def policy(root: Path, text: str = POLICY) -> Policy:
    return Policy.from_toml(text.format(root=root), source="now.toml")


def same(a: object, b: object) -> None:
    """Equal field for field, but for the fresh decision id and the call's own id."""
    assert dataclasses.replace(a, decision_id="", call_id="") == \
        dataclasses.replace(b, decision_id="", call_id="")  # type: ignore[type-var]


def slow_then_fast(gate: Gate, name: str, args: dict[str, object], context: RunContext,
                   tag: str) -> tuple[Proposal, Proposal]:
    """``propose``, then at once ``propose_now`` of the same call. Another process's commit
    that writes thread memory in between (on a shared PostgreSQL, another test run's) makes
    the memory unremembered and ``propose_now`` rightly says ``None``: try again."""
    for attempt in range(20):
        slow = gate.propose(ToolCall(id=f"{tag}-s{attempt}", name=name, args=args), context)
        fast = gate.propose_now(ToolCall(id=f"{tag}-f{attempt}", name=name, args=args),
                                context)
        if fast is not None:
            return slow, fast
    raise AssertionError("propose_now never answered from memory")


def audit(store: Store) -> list[tuple[str, str | None, dict[str, object]]]:
    return [(e.kind, e.actor, {k: v for k, v in json.loads(e.data).items()
                               if k not in ("decision_id", "call_id")})
            for e in store.audit_events()]


def test_a_quick_allowed_call_is_proposed_now_exactly_as_propose_would(
        workspace: Path, store: Store) -> None:
    gate = Gate(policy(workspace), store)
    first = ToolCall(id="c1", name="lookup", args={"q": "x"})
    assert gate.propose_now(first, CTX) is None  # the thread's memory is not read yet
    gate.flush()
    assert audit(store) == []  # and did nothing
    slow, fast = slow_then_fast(gate, "lookup", {"q": "x"}, CTX, "c")  # propose remembers it
    assert fast.kind is slow.kind is ProposalKind.ALLOWED
    same(fast.verdict, slow.verdict)
    gate.flush()
    events = audit(store)
    assert {kind for kind, _, _ in events} == {"call.allowed"}
    assert events[-2] == events[-1]  # propose's event and propose_now's
    assert store.verify_audit().ok


def test_anything_else_is_left_to_propose_and_nothing_is_written(workspace: Path,
                                                                 store: Store) -> None:
    gate = Gate(policy(workspace), store)
    gate.propose(ToolCall(id="c0", name="lookup", args={}), CTX)  # memory remembered
    gate.flush()
    before = len(audit(store))
    for call in (ToolCall(id="c1", name="deploy", args={}),  # gated: an ask
                 ToolCall(id="c2", name="read_file", args={"path": "a.txt"}),  # a path
                 ToolCall(id="c3", name="other", args={}),  # unknown: an ask
                 ToolCall(id="c4", name="lookup", args="not an object")):  # malformed
        assert gate.propose_now(call, CTX) is None, call
    assert gate.propose_now(ToolCall(id="c5", name="lookup", args={}),
                            RunContext(thread_id="t-other")) is None  # not remembered
    synchronous = Gate(policy(workspace), store, verdict_audit="sync")
    assert synchronous.propose_now(ToolCall(id="c6", name="lookup", args={}), CTX) is None
    gate.flush()
    assert len(audit(store)) == before


def test_the_stored_mode_and_a_remembered_rejection_count_as_in_propose(
        workspace: Path, store: Store) -> None:
    gated = Gate(policy(workspace, GATED), store)
    _, token = gated.add_user("alice", roles=[])
    asked = gated.propose(ToolCall(id="g1", name="lookup", args={"q": "x"}), CTX)
    assert asked.request is not None
    gated.decide(asked.request.id, Decision.reject("no", []),
                 identity=gated.authenticate(token))
    # The tool is quick under this policy, but the thread remembers its rejection: the full
    # evaluation decides (propose denies it as rejected before).
    gate = Gate(policy(workspace), store)
    call = ToolCall(id="g2", name="lookup", args={"q": "x"})
    assert gate.propose(call, CTX).kind is ProposalKind.DENIED
    assert gate.propose_now(ToolCall(id="g3", name="lookup", args={"q": "x"}), CTX) is None

    other = RunContext(thread_id="t-mode", run_id="r-2")
    gate.set_thread_mode("t-mode", ReviewMode.FULL)
    slow, fast = slow_then_fast(gate, "lookup", {}, other, "m")
    assert fast.verdict.review_mode is slow.verdict.review_mode is ReviewMode.FULL
    same(fast.verdict, slow.verdict)
