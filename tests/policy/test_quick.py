"""The quick path (``signoff.policy.quick``) returns exactly the full evaluation's verdict.

Generated policies (tools with and without paths, shell and working-directory
arguments, gating, rules of every kind, unknown-tool settings, modes and
ceilings), calls (good and malformed ids, names and arguments) and memories
(none, in-memory rejections, a store-like memory that can say which tools
have a rejection in a thread) go through ``Policy.evaluate`` and through
``Evaluation.run`` directly; the verdicts must be equal but for the decision
id, and the quick path must have answered a good share of them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from signoff import Gate, Grant, GrantScope, Memory, Policy, Rejection, SqliteStore, ToolCall
from signoff.canonical import args_hash, parse_args
from signoff.errors import InvalidArguments, PolicyError
from signoff.model import InteractionMode, ReviewMode, RunContext, Verdict
from signoff.policy.evaluation import Evaluation
from signoff.policy.quick import quick_verdict

TOOLS = ("lookup", "fetch", "read_file", "execute", "ask_user", "mystery", "notes")
MODES = ("manual", "auto", "full")
ROOT = "/tmp/signoff-quick-ws"


class ProbingMemory(Memory):
    """A memory that, like the SQL stores, says which tools have a rejection in a thread —
    here possibly more than it holds (``extra``), as a stale or coarse probe may."""

    def __init__(self, rejections: Sequence[Rejection], extra: frozenset[str]) -> None:
        super().__init__(rejections)
        self.extra = extra
        self.probed = 0

    def rejected_tools(self, thread_id: str) -> frozenset[str]:
        self.probed += 1
        return frozenset(t for (th, t, _) in self._rejections if th == thread_id) | self.extra


@st.composite
def tool_table(draw: st.DrawFn, name: str) -> str:
    lines = [f"[tools.{name}]"]
    if name == "execute" or draw(st.integers(0, 9)) == 0:
        lines.append('shell = "command"')
    if draw(st.integers(0, 3)) == 0:
        lines.append('paths = ["path"]')
    if draw(st.integers(0, 5)) == 0:
        lines.append('cwd = "dir"')
    if draw(st.booleans()):
        lines.append(f"writes = {str(draw(st.booleans())).lower()}")
    if draw(st.booleans()):
        lines.append(f'risk = "{draw(st.sampled_from(["low", "medium", "high", "critical"]))}"')
    return "\n".join(lines)


@st.composite
def rule_table(draw: st.DrawFn, index: int, shell_tools: Sequence[str]) -> str:
    effect = draw(st.sampled_from(["allow", "ask", "deny"]))
    tool = draw(st.sampled_from([*TOOLS, *TOOLS, "*", "look*", "no-such"]))
    lines = ["[[rules]]", f'id = "r{index}"', f'effect = "{effect}"', f'tool = "{tool}"']
    if effect == "ask" and draw(st.booleans()):
        lines.append("mandatory = true")
    if draw(st.booleans()):
        lines.append(f'args = {{ query = "{draw(st.sampled_from(["secret*", "*", "x"]))}" }}')
    if tool in shell_tools and draw(st.booleans()):
        lines.append('command = "rm *"')
    return "\n".join(lines)


@st.composite
def policies(draw: st.DrawFn) -> str:
    declared = draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=len(TOOLS)))
    tables = [draw(tool_table(name)) for name in declared]
    shell_tools = [n for n, t in zip(declared, tables, strict=True) if "shell" in t]
    gated = draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=2))
    head = [
        "[policy]",
        f'version = "v{draw(st.integers(0, 3))}"',
        f'default_review_mode = "{draw(st.sampled_from(MODES))}"',
        f'ceiling = "{draw(st.sampled_from(MODES))}"',
        f'unknown_tools = "{draw(st.sampled_from(["allow", "ask", "deny"]))}"',
        f'unattended_asks = "{draw(st.sampled_from(["block", "allow"]))}"',
        f'clarification_tool = "{draw(st.sampled_from(["ask_user", "notes"]))}"',
        f"gated = {json.dumps(gated)}",
    ]
    if draw(st.booleans()):
        head += ["[workspace]", f'root = "{ROOT}"',
                 f'outside = "{draw(st.sampled_from(["allow", "approve", "deny"]))}"']
    rules = [draw(rule_table(i, shell_tools))
             for i in range(draw(st.sampled_from([0, 0, 1, 2, 3])))]
    return "\n".join([*head, *tables, *rules]) + "\n"


GOOD_ARGS: list[Any] = [None, {}, {"query": "weather"}, {"query": "secret-1"}]
ARGS: list[Any] = [
    *GOOD_ARGS * 4, {"query": ["a", 1, None]},
    {"path": "README.md"}, {"path": "/etc/passwd"}, {"command": "ls"}, {"command": "rm -r x"},
    {"dir": "/"}, '{"query": "weather"}', b'{"query": "weather"}', '{"a": 1, "a": 2}', "[1]",
    "not json", {"n": float("nan")}, {1: "x"}, {"big": 2**60}, {"s": "\ud800"},
    {"query": "caf\u00e9", "n": 1.5, "ok": True},
]


calls = st.builds(
    ToolCall,
    id=st.sampled_from([*["call-1", "call-2"] * 4, None, "", "  ", 7]),
    name=st.sampled_from([*TOOLS * 4, "", "bad\nname", "x" * 300, "unheard_of"]),
    args=st.sampled_from(ARGS),
)
contexts = st.builds(
    RunContext,
    thread_id=st.sampled_from([None, "", "t1", "t2"]),
    run_id=st.sampled_from([None, "run-1"]),
    session_id=st.sampled_from([None, "s1"]),
    review_mode=st.sampled_from([None, *ReviewMode]),
    interaction_mode=st.sampled_from(list(InteractionMode)),
    parent_call=st.sampled_from([None, "parent"]),
)


def _hash_of(args: Any) -> str | None:
    try:
        return args_hash(parse_args(args))
    except InvalidArguments:
        return None


@st.composite
def memories(draw: st.DrawFn, call: ToolCall) -> Memory:
    rejections: list[Rejection] = []
    own = _hash_of(call.args)
    for _ in range(draw(st.integers(0, 2))):
        rejections.append(Rejection(
            thread_id=draw(st.sampled_from(["t1", "t2"])),
            tool=draw(st.sampled_from([call.name if isinstance(call.name, str) else "x",
                                       *TOOLS])),
            args_hash=draw(st.sampled_from([own or "sha256:0", "sha256:0"])),
            reason="no", alternatives=("ask first",), request_id="req_1"))
    grants = [Grant(id="g1", scope=GrantScope.THREAD, tool="*", thread_id="t1")] \
        if draw(st.booleans()) else []
    kind = draw(st.sampled_from(["memory", "probing", "probing-extra"]))
    if kind == "memory":
        return Memory(rejections, grants)
    extra = frozenset(draw(st.lists(st.sampled_from(TOOLS), max_size=2))) \
        if kind == "probing-extra" else frozenset()
    memory = ProbingMemory(rejections, extra)
    for grant in grants:
        memory.add_grant(grant)
    return memory


def _same(a: Verdict, b: Verdict) -> bool:
    return dataclasses.replace(a, decision_id="-") == dataclasses.replace(b, decision_id="-")


QUICK = {"taken": 0, "seen": 0}


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), text=policies(), call=calls, context=contexts)
def test_evaluate_equals_the_full_evaluation(data: st.DataObject, text: str, call: ToolCall,
                                             context: RunContext) -> None:
    try:
        config = Policy.from_toml(text).config
    except PolicyError:
        assume(False)
        raise
    memory = data.draw(memories(call))
    policy = Policy(config, memory=memory, clock=lambda: 1000.0)
    full = Evaluation(policy, call, context).run()
    quick = quick_verdict(policy, call, context)
    QUICK["seen"] += 1
    if quick is not None:
        QUICK["taken"] += 1
        assert _same(quick, full), (text, call, context)
    assert _same(policy.evaluate(call, context), full), (text, call, context)
    assert _same(policy.evaluate_turn([call], context)[0], full)


@pytest.mark.slow
def test_the_quick_path_was_exercised() -> None:
    """A property that never took the quick path would prove nothing (run it here if the
    test order did not run it first)."""
    if QUICK["seen"] < 500:
        test_evaluate_equals_the_full_evaluation()
    assert QUICK["taken"] >= QUICK["seen"] // 20, QUICK


POLICY = f"""
[policy]
gated = ["execute"]
[workspace]
root = "{ROOT}"
[tools.read_file]
paths = ["path"]
[tools.lookup]
[tools.execute]
shell = "command"
"""


def test_a_plain_tool_takes_the_quick_path_and_a_rejection_still_binds(tmp_path: Path) -> None:
    gate = Gate(Policy.from_toml(POLICY), SqliteStore(tmp_path / "s.db"))
    policy = gate.policy
    context = RunContext(thread_id="t1", run_id="r1", review_mode=ReviewMode.MANUAL)
    lookup = ToolCall(id="c1", name="lookup", args={"query": "weather"})
    verdict = quick_verdict(policy, lookup, context)
    assert verdict is not None and verdict.code == "allowed" and verdict.args_hash is None
    assert _same(verdict, Evaluation(policy, lookup, context).run())
    for name, args in (("read_file", {"path": "README.md"}), ("execute", {"command": "ls"})):
        assert quick_verdict(policy, ToolCall(id="c2", name=name, args=args), context) is None
    with gate.store.transaction() as tx:
        tx.put_rejection(Rejection(thread_id="t1", tool="lookup",
                                   args_hash=args_hash({"query": "weather"}), reason="no"),
                         at=1.0)
        tx.notify("req_1")  # as the rejecting decision's commit does: cached memory is stale
    assert quick_verdict(policy, lookup, context) is None
    denied = policy.evaluate(lookup, context)
    assert denied.code == "rejected_before"
    other = ToolCall(id="c3", name="lookup", args={"query": "news"})
    assert quick_verdict(policy, other, context) is None  # the tool has a rejection here
    allowed = policy.evaluate(other, context)
    assert allowed.code == "allowed" and allowed.args_hash == args_hash({"query": "news"})
    assert quick_verdict(policy, lookup, RunContext(thread_id="t2")) is not None
    gate.close()
