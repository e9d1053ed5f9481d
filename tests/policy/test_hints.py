"""MCP tool annotations (``signoff.policy.hints``) and the ``[mcp]`` table that weighs them:
untrusted hints can only add care — a tool the server marks destructive (or open-world) is
asked by review mode or always by a human, at a higher risk; nothing a server says lowers
a verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from signoff import Policy, ToolCall
from signoff.errors import PolicyError
from signoff.model import Effect, ReviewMode, Risk, Step, Verdict
from signoff.policy import parse_policy
from signoff.policy.hints import HintBook, McpConfig, ToolHints
from signoff.policy.modes import trusted_context

DOCS = Path(__file__).parents[2] / "docs"


def _policy(mcp: str = 'server = "fs"', *, unknown: str = "allow", gated: str = "[]",
            extra: str = "") -> Policy:
    return Policy.from_toml(f"""
[policy]
version = "hints-1"
unknown_tools = "{unknown}"
gated = {gated}
[mcp]
{mcp}
[tools.fs__write_file]
paths = ["path"]
writes = true
[tools.fs__read_text_file]
paths = ["path"]
{extra}
""", source="hints.toml")


def _judge(policy: Policy, tool: str, args: dict[str, Any] | None = None,
           mode: str | ReviewMode | None = None, interaction: str | None = None) -> Verdict:
    return policy.evaluate(ToolCall(id="c", name=tool, args=args or {"path": "a.txt"}),
                           trusted_context(thread_id="t", review_mode=mode,
                                           interaction_mode=interaction))


DESTRUCTIVE = ToolHints(destructive=True)
OPEN_WORLD = ToolHints(open_world=True)


# ---- [mcp] -------------------------------------------------------------------------------

def test_mcp_table_parses_and_defaults() -> None:
    assert parse_policy("[policy]\n").mcp == McpConfig()
    config = parse_policy("""
[mcp]
server = "fs-2.x_y"
separator = "."
destructive = "mandatory"
open_world = "gated"
destructive_risk = "critical"
open_world_risk = "high"
""").mcp
    assert config == McpConfig(server="fs-2.x_y", separator=".", destructive="mandatory",
                               open_world="gated", destructive_risk=Risk.CRITICAL,
                               open_world_risk=Risk.HIGH)
    defaults = McpConfig()
    assert (defaults.server, defaults.separator, defaults.destructive, defaults.open_world,
            defaults.destructive_risk, defaults.open_world_risk) == (
        None, "__", "gated", "ignore", Risk.HIGH, Risk.MEDIUM)


@pytest.mark.parametrize(("field", "value"), [
    ("server", '""'), ("server", '"fs server"'), ("server", '"fs/x"'), ("server", "3"),
    ("server", "true"), ("server", '["fs"]'),
    ("separator", '""'), ("separator", '"123456789"'), ("separator", "1"),
    ("destructive", '"ask"'), ("destructive", '"Gated"'), ("destructive", "true"),
    ("open_world", '"deny"'), ("open_world", "false"),
    ("destructive_risk", '"severe"'), ("destructive_risk", "2"),
    ("open_world_risk", '"HIGH"'), ("open_world_risk", "[]"),
])
def test_bad_mcp_values_name_the_table_and_the_field(field: str, value: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(f"[mcp]\n{field} = {value}\n", source="team.toml")
    error = info.value
    assert (error.rule, error.field) == ("[mcp]", field)
    assert "team.toml" in str(error) and "[mcp]" in str(error) and f"'{field}'" in str(error)
    assert error.code == "policy_invalid"


def test_unknown_mcp_keys_and_non_tables_are_refused() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy('[mcp]\nservre = "fs"\n')
    assert (info.value.rule, info.value.field) == ("[mcp]", "servre")
    assert "unknown key" in str(info.value)
    with pytest.raises(PolicyError) as info:
        parse_policy('mcp = "fs"\n')
    assert info.value.rule == "[mcp]"


def test_every_mcp_key_is_documented() -> None:
    text = (DOCS / "policy.md").read_text("utf-8")
    assert "## `[mcp]`" in text
    for key in McpConfig.__dataclass_fields__:
        assert f"| `{key}` |" in text, key
    section = text.split("## `[mcp]`", 1)[1].split("\n## ", 1)[0]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    config = parse_policy(example, source="docs/policy.md")
    assert config.mcp.server == "fs" and "fs__write_file" in config.gated


def test_policy_name() -> None:
    assert McpConfig().policy_name("write_file") == "write_file"
    assert McpConfig(server="fs").policy_name("write_file") == "fs__write_file"
    assert McpConfig(server="fs", separator=".").policy_name("write_file") == "fs.write_file"
    assert McpConfig(server="fs").policy_name("git_status", "git") == "git__git_status"
    assert McpConfig(server="fs").policy_name("write_file", "") == "write_file"
    assert McpConfig().policy_name("x", "srv") == "srv__x"


# ---- ToolHints.from_annotations ----------------------------------------------------------

@pytest.mark.parametrize(("annotations", "expected"), [
    (None, None), ("destructiveHint", None), (["destructiveHint"], None), ({}, None),
    ({"readOnlyHint": True}, None),
    ({"readOnlyHint": False}, None),  # only explicit true hints count
    ({"destructiveHint": False, "openWorldHint": False}, None),
    ({"destructiveHint": "true"}, None), ({"destructiveHint": 1}, None),
    ({"destructiveHint": None}, None), ({"idempotentHint": True}, None),
    ({"destructiveHint": True}, DESTRUCTIVE),
    ({"readOnlyHint": True, "destructiveHint": True}, DESTRUCTIVE),  # contradictory: care
    ({"openWorldHint": True}, OPEN_WORLD),
    ({"destructiveHint": True, "openWorldHint": True},
     ToolHints(destructive=True, open_world=True)),
])
def test_from_annotations(annotations: object, expected: ToolHints | None) -> None:
    assert ToolHints.from_annotations(annotations) == expected


def test_a_server_that_calls_its_write_tool_read_only_changes_nothing() -> None:
    """A lying server: write_file annotated readOnlyHint: true, destructiveHint: false."""
    lie = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}
    for kwargs in ({"unknown": "allow"}, {"unknown": "ask", "gated": '["fs__write_file"]'},
                   {"unknown": "deny"}):
        plain, lied_to = _policy(**kwargs), _policy(**kwargs)
        lied_to.hints.update({name: ToolHints.from_annotations(lie)
                              for name in ("fs__write_file", "fs__delete_file")})
        assert len(lied_to.hints) == 0
        for tool in ("fs__write_file", "fs__delete_file"):
            for mode in ("manual", "full"):
                a, b = _judge(plain, tool, mode=mode), _judge(lied_to, tool, mode=mode)
                assert (a.effect, a.code, a.risk) == (b.effect, b.code, b.risk), (kwargs, tool)
    gated = _policy(gated='["fs__write_file"]')
    gated.hints.update({"fs__write_file": ToolHints.from_annotations(lie)})
    assert _judge(gated, "fs__write_file").effect is Effect.ASK


# ---- what hints do to verdicts -----------------------------------------------------------

@pytest.mark.parametrize("tool", ["fs__write_file", "fs__delete_file"])  # declared, undeclared
def test_a_destructive_hint_makes_an_allowed_tool_asked_by_mode(tool: str) -> None:
    policy = _policy()
    before = _judge(policy, tool)
    assert before.effect is Effect.ALLOW
    policy.hints.update({tool: DESTRUCTIVE})
    verdict = _judge(policy, tool)
    assert (verdict.effect, verdict.code, verdict.risk) == (Effect.ASK, "mcp_hint", Risk.HIGH)
    assert not verdict.mandatory
    hint = next(r for r in verdict.reasons if r.code == "mcp_hint")
    assert hint.step is Step.GATED and "destructive" in hint.text and tool in hint.text
    assert "untrusted" in hint.text
    # by review mode: full allows it, an unattended run is blocked, auto sends high risk on
    assert _judge(policy, tool, mode="full").effect is Effect.ALLOW
    assert _judge(policy, tool, interaction="scheduled").effect is Effect.BLOCKED
    assert _judge(policy, tool, mode="auto").effect is Effect.ASK
    # other tools, and the un-namespaced name, are untouched
    assert _judge(policy, "fs__read_text_file").effect is Effect.ALLOW
    policy.hints.update({"write_file": DESTRUCTIVE})
    assert _judge(policy, "fs__read_text_file").effect is Effect.ALLOW


def test_mandatory_asks_a_human_even_in_full_mode() -> None:
    policy = _policy('server = "fs"\ndestructive = "mandatory"')
    policy.hints.update({"fs__write_file": DESTRUCTIVE, "fs__delete_file": DESTRUCTIVE})
    for tool in ("fs__write_file", "fs__delete_file"):
        verdict = _judge(policy, tool, mode=ReviewMode.FULL)
        assert (verdict.effect, verdict.code) == (Effect.ASK, "mcp_hint"), tool
        assert verdict.mandatory and verdict.risk is Risk.HIGH
        assert any(r.step is Step.MANDATORY_ASK and r.code == "mcp_hint"
                   for r in verdict.reasons)
        assert _judge(policy, tool, mode="full",
                      interaction="autonomous").effect is Effect.BLOCKED
    assert _judge(policy, "fs__read_text_file", mode="full").effect is Effect.ALLOW


def test_ignore_changes_nothing() -> None:
    policy = _policy('server = "fs"\ndestructive = "ignore"')  # open_world: ignore by default
    plain = _policy('server = "fs"\ndestructive = "ignore"')
    policy.hints.update({"fs__write_file": ToolHints(destructive=True, open_world=True),
                         "fs__delete_file": DESTRUCTIVE})
    for tool in ("fs__write_file", "fs__delete_file"):
        a, b = _judge(plain, tool), _judge(policy, tool)
        assert (a.effect, a.code, a.risk) == (b.effect, b.code, b.risk) == (
            Effect.ALLOW, "allowed", a.risk)


def test_open_world_hints_and_risks() -> None:
    policy = _policy('server = "fs"\nopen_world = "gated"')
    policy.hints.update({"fs__delete_file": OPEN_WORLD})
    verdict = _judge(policy, "fs__delete_file")
    assert (verdict.effect, verdict.code, verdict.risk) == (Effect.ASK, "mcp_hint", Risk.MEDIUM)
    assert "open-world" in verdict.message or any("open-world" in r.text
                                                  for r in verdict.reasons)
    policy.hints.update({"fs__delete_file": ToolHints(destructive=True, open_world=True)})
    verdict = _judge(policy, "fs__delete_file")
    assert verdict.risk is Risk.HIGH  # the higher of the two
    assert any("destructive and open-world" in r.text for r in verdict.reasons)
    critical = _policy('server = "fs"\ndestructive_risk = "critical"')
    critical.hints.update({"fs__write_file": DESTRUCTIVE})
    assert _judge(critical, "fs__write_file").risk is Risk.CRITICAL
    mixed = _policy('server = "fs"\nopen_world = "mandatory"')
    mixed.hints.update({"fs__delete_file": ToolHints(destructive=True, open_world=True)})
    verdict = _judge(mixed, "fs__delete_file", mode="full")
    assert verdict.effect is Effect.ASK and verdict.mandatory  # the stronger treatment


def test_an_allow_rule_still_allows_under_gated_but_not_under_mandatory() -> None:
    rule = '[[rules]]\nid = "writes-ok"\neffect = "allow"\ntool = "fs__write_file"\n'
    gated = _policy(unknown="ask", extra=rule)
    gated.hints.update({"fs__write_file": DESTRUCTIVE})
    verdict = _judge(gated, "fs__write_file")
    assert (verdict.effect, verdict.code) == (Effect.ALLOW, "rule_allow")
    assert any(r.rule == "writes-ok" for r in verdict.reasons)
    mandatory = _policy('server = "fs"\ndestructive = "mandatory"', extra=rule)
    mandatory.hints.update({"fs__write_file": DESTRUCTIVE})
    verdict = _judge(mandatory, "fs__write_file", mode="full")
    assert (verdict.effect, verdict.code, verdict.mandatory) == (Effect.ASK, "mcp_hint", True)


def test_a_tool_the_policy_gates_keeps_its_own_reason() -> None:
    policy = _policy(gated='["fs__write_file"]')
    policy.hints.update({"fs__write_file": DESTRUCTIVE})
    verdict = _judge(policy, "fs__write_file")
    assert (verdict.effect, verdict.code) == (Effect.ASK, "gated")
    assert verdict.risk is Risk.HIGH  # the hint still adds its risk


def test_updating_the_hints_again_restores_the_verdict() -> None:
    policy = _policy()
    before = _judge(policy, "fs__write_file")
    generation = policy.hints.generation
    policy.hints.update({"fs__write_file": DESTRUCTIVE})
    assert policy.hints.generation == generation + 1
    assert _judge(policy, "fs__write_file").code == "mcp_hint"
    policy.hints.update({"fs__write_file": DESTRUCTIVE})  # the same again: nothing to forget
    assert policy.hints.generation == generation + 1
    policy.hints.update({"fs__write_file": None})
    after = _judge(policy, "fs__write_file")
    assert policy.hints.generation == generation + 2 and len(policy.hints) == 0
    assert (after.effect, after.code, after.risk) == (before.effect, before.code, before.risk)
    policy.hints.update({"fs__never_listed": None})  # clearing what is not there: no change
    assert policy.hints.generation == generation + 2


def test_deny_rules_and_deny_verdicts_still_deny() -> None:
    """A deny rule, and unknown_tools = "deny" for a tool the policy does not know."""
    rule = '[[rules]]\nid = "no-writes"\neffect = "deny"\ntool = "fs__write_file"\n'
    for mcp in ('server = "fs"', 'server = "fs"\ndestructive = "mandatory"'):
        policy = _policy(mcp, extra=rule, unknown="deny")
        policy.hints.update({"fs__write_file": DESTRUCTIVE, "fs__delete_file": DESTRUCTIVE})
        verdict = _judge(policy, "fs__write_file", mode="full")
        assert (verdict.effect, verdict.code) == (Effect.DENY, "rule_deny"), mcp
        assert _judge(policy, "fs__delete_file", mode="full").effect is Effect.DENY


def test_policies_can_share_one_hint_book() -> None:
    book = HintBook()
    config = _policy().config
    first, second = Policy(config, hints=book), Policy(config, hints=book)
    assert _judge(first, "fs__write_file").effect is Effect.ALLOW
    assert _judge(second, "fs__write_file").effect is Effect.ALLOW
    book.update({"fs__write_file": DESTRUCTIVE})
    assert first.hints is book and second.hints is book
    assert _judge(first, "fs__write_file").code == "mcp_hint"
    assert _judge(second, "fs__write_file").code == "mcp_hint"
    assert len(Policy(config).hints) == 0  # a policy of its own starts with none
