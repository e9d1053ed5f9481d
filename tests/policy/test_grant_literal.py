"""A grant or an allow rule admits only what it names (the policy, without a store).

Grants are kept by the thread's memory and judged by ``Policy.evaluate``: the tool a
grant names is a literal name, a pattern grant covers only the arguments it names, and
an allow rule's argument pattern admits a list only when every element matches.
Deny and ask rules, the careful direction, still match a list on any element.
"""

from __future__ import annotations

from typing import Any

import pytest

from signoff import Policy, RunContext, ToolCall, Verdict
from signoff.canonical import args_hash
from signoff.model import Grant, GrantScope
from signoff.policy.memory import Memory

GRANTS = """
[policy]
version = "grant-literal"
unknown_tools = "ask"
gated = ["send_email", "deploy"]
[tools.send_email]
[tools.deploy]
"""

RULES = """
[policy]
version = "list-args"
gated = ["send_email"]
[tools.send_email]

[[rules]]
id = "colleagues"
effect = "allow"
tool = "send_email"
args = { to = "*@example.com" }

[[rules]]
id = "no-competitor"
effect = "deny"
tool = "send_email"
args = { cc = "*@competitor.example" }

[[rules]]
id = "board-asks"
effect = "ask"
mandatory = true
tool = "send_email"
args = { bcc = "board@*" }
"""


def judge(policy: Policy, tool: str, args: dict[str, Any]) -> Verdict:
    return policy.evaluate(ToolCall(id="c", name=tool, args=args), RunContext(thread_id="t"))


def granted(policy: Policy, tool: str, args: dict[str, Any]) -> bool:
    verdict = judge(policy, tool, args)
    assert verdict.source.startswith("grant:") == (verdict.effect.value == "allow"), verdict
    return verdict.source.startswith("grant:")


def with_grants(*grants: Grant) -> Policy:
    memory = Memory()
    for grant in grants:
        memory.add_grant(grant)
    return Policy.from_toml(GRANTS, memory=memory)


@pytest.mark.parametrize(("name", "others"), [
    ("*", ["deploy", "send_email", "anything"]),
    ("?", ["x", "?x"]),
    ("[a-z]*", ["abc", "a", "deploy"]),
    ("send_*", ["send_email", "send_"]),
])
def test_a_grant_names_its_tool_literally(name: str, others: list[str]) -> None:
    policy = with_grants(Grant(id="g", scope=GrantScope.THREAD, tool=name, thread_id="t"))
    assert granted(policy, name, {})
    for tool in others:
        assert not granted(policy, tool, {"env": "production"}), tool


def test_an_exact_grant_admits_only_its_arguments_hash() -> None:
    args = {"to": "a@example.com", "subject": "hi"}
    policy = with_grants(Grant(id="g", scope=GrantScope.THREAD, tool="send_email",
                               thread_id="t", args_hash=args_hash(args)))
    assert granted(policy, "send_email", args)
    assert not granted(policy, "send_email", {**args, "bcc": "exfil@attacker.example"})
    assert not granted(policy, "send_email", {**args, "subject": "hi!"})


def test_a_pattern_grant_refuses_arguments_it_does_not_name() -> None:
    policy = with_grants(Grant(id="g", scope=GrantScope.THREAD, tool="send_email",
                               thread_id="t", args={"to": "*@example.com"}))
    assert granted(policy, "send_email", {"to": "a@example.com"})
    assert not granted(policy, "send_email", {"to": "a@example.com",
                                              "bcc": "exfil@attacker.example"})
    assert not granted(policy, "send_email", {"to": "evil@attacker.example"})


def test_a_grant_with_no_patterns_covers_its_tool_whatever_the_arguments() -> None:
    policy = with_grants(Grant(id="g", scope=GrantScope.THREAD, tool="send_email",
                               thread_id="t"))
    assert granted(policy, "send_email", {"to": "a@example.com", "bcc": "b@example.com"})
    assert not granted(policy, "deploy", {})


def test_an_allow_rule_admits_a_list_only_when_every_element_matches() -> None:
    policy = Policy.from_toml(RULES)
    ok = judge(policy, "send_email", {"to": ["colleague@example.com", "boss@example.com"]})
    assert ok.effect.value == "allow" and "colleagues" in {r.rule for r in ok.reasons}
    foreign = judge(policy, "send_email", {"to": ["colleague@example.com",
                                                  "evil@attacker.example"]})
    assert foreign.effect.value == "ask"
    assert judge(policy, "send_email", {"to": []}).effect.value == "ask"
    assert judge(policy, "send_email", {"to": "colleague@example.com"}).effect.value == "allow"


def test_deny_and_ask_rules_match_a_list_on_any_element() -> None:
    policy = Policy.from_toml(RULES)
    denied = judge(policy, "send_email", {"to": "a@example.com",
                                          "cc": ["a@example.com", "spy@competitor.example"]})
    assert denied.effect.value == "deny"
    asked = judge(policy, "send_email", {"to": "a@example.com",
                                         "bcc": ["a@example.com", "board@example.com"]})
    assert asked.effect.value == "ask"
    assert judge(policy, "send_email", {"to": "a@example.com",
                                        "cc": []}).effect.value == "allow"
