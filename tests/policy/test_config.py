"""Loading signoff.toml: the documented shape loads; every mistake names file, rule and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff import PolicyError, ReviewMode, Risk
from signoff.policy import Policy, parse_policy
from signoff.policy.config import parse_duration

DOCUMENTED_EXAMPLE = """
[policy]
version = "2026-11-29"
default_review_mode = "manual"
ceiling = "full"
gated = ["execute", "run_in_background", "schedule_task"]
unknown_tools = "ask"
clarification_tool = "ask_user"
unattended_asks = "block"

[workspace]
name = "dev-workspace"
root = "/srv/agent/workspace"
outside = "approve"
allowlist = ["/etc/hostname"]
mandatory = false

[tools.read_file]
paths = ["path"]
[tools.write_file]
paths = ["path"]
writes = true
[tools.execute]
shell = "command"

[[rules]]
id = "no-rm"
effect = "deny"
tool = "execute"
command = "rm *"

[[rules]]
id = "safe-shell"
effect = "allow"
tool = "execute"
command = ["ls *", "echo *", "git status", "pytest *"]

[[rules]]
id = "env-files"
effect = "ask"
mandatory = true
tool = "read_file"
args = { path = "**/.env" }
risk = "critical"
roles = ["security"]
approvals = 2
expires = "30m"
"""


def test_documented_example_loads() -> None:
    config = parse_policy(DOCUMENTED_EXAMPLE, source="signoff.toml")
    assert config.version == "2026-11-29"
    assert config.default_review_mode is ReviewMode.MANUAL
    assert config.workspace is not None and config.workspace.outside == "approve"
    assert config.tools["execute"].shell == "command"
    assert [r.id for r in config.rules] == ["no-rm", "safe-shell", "env-files"]
    env = config.rules[2]
    assert env.mandatory and env.risk is Risk.CRITICAL and env.roles == ("security",)
    assert env.approvals == 2 and env.expires == 1800.0


def test_starter_template_loads(tmp_path: Path) -> None:
    from signoff.cli import main

    target = tmp_path / "signoff.toml"
    assert main(["init", str(target), "--root", str(tmp_path)]) == 0
    policy = Policy.load(target)
    assert policy.config.workspace is not None
    assert policy.config.workspace.root == str(tmp_path)


def test_self_service_modes_are_off_unless_asked_for() -> None:
    assert parse_policy("[policy]\n").self_service_modes is False
    assert parse_policy("[policy]\nself_service_modes = true\n").self_service_modes is True


def test_version_defaults_to_content_hash() -> None:
    a = parse_policy("[policy]\n")
    b = parse_policy("[policy]\ngated = []\n")
    assert a.version.startswith("sha256:") and a.version != b.version


@pytest.mark.parametrize(("text", "rule", "field", "fragment"), [
    ("[policy]\nversoin = '1'\n", "[policy]", "versoin", "did you mean 'version'"),
    ("[polciy]\n", None, "polciy", "unknown key"),
    ("[policy]\ndefault_review_mode = 'yolo'\n", "[policy]", "default_review_mode",
     "manual, auto, full"),
    ("[policy]\nceiling = 3\n", "[policy]", "ceiling", "manual, auto, full"),
    ("[policy]\nunknown_tools = 'maybe'\n", "[policy]", "unknown_tools", "allow, ask, deny"),
    ("[policy]\ngated = 'execute'\n", "[policy]", "gated", "list of non-empty strings"),
    ("[policy]\ndefault_expires = '10 minutes'\n", "[policy]", "default_expires", "duration"),
    ("[policy]\ndefault_approvals = 0\n", "[policy]", "default_approvals", "1 to 100"),
    ("[policy]\nself_service_modes = 'yes'\n", "[policy]", "self_service_modes",
     "true or false"),
    ("[workspace]\nroot = 'relative'\n", "[workspace]", "root", "absolute"),
    ("[workspace]\nroot = '/ws'\noutside = 'sometimes'\n", "[workspace]", "outside",
     "allow, approve, deny"),
    ("[workspace]\nroot = '/ws'\nallowlist = ['etc/x']\n", "[workspace]", "allowlist",
     "absolute"),
    ("[tools.x]\npath = ['p']\n", "[tools.x]", "path", "did you mean 'paths'"),
    ("[tools.x]\nshell = 1\n", "[tools.x]", "shell", "argument"),
    ("[[rules]]\neffect = 'deny'\n", "rules[0]", "id", "needs an id"),
    ("[[rules]]\nid = 'a'\neffect = 'block'\n", "rules[0] (id 'a')", "effect",
     "allow, ask, deny"),
    ("[[rules]]\nid = 'a'\neffect = 'deny'\n[[rules]]\nid = 'a'\neffect = 'deny'\n",
     "rules[1] (id 'a')", "id", "duplicate"),
    ("[[rules]]\nid = 'a'\neffect = 'deny'\nmandatory = true\n", "rules[0] (id 'a')",
     "mandatory", "only ask rules"),
    ("[[rules]]\nid = 'a'\neffect = 'allow'\nroles = ['x']\n", "rules[0] (id 'a')", "roles",
     "only meaningful on ask"),
    ("[[rules]]\nid = 'a'\neffect = 'ask'\napprovals = 'two'\n", "rules[0] (id 'a')",
     "approvals", "integer"),
    ("[[rules]]\nid = 'a'\neffect = 'ask'\nexpires = '-5m'\n", "rules[0] (id 'a')", "expires",
     "duration"),
    ("[[rules]]\nid = 'a'\neffect = 'ask'\nrisk = 'extreme'\n", "rules[0] (id 'a')", "risk",
     "low, medium, high, critical"),
    ("[[rules]]\nid = 'a'\neffect = 'deny'\nargs = { path = 're:(' }\n", "rules[0] (id 'a')",
     "args.path", "regular expression"),
    ("[[rules]]\nid = 'a'\neffect = 'deny'\nargs = { path = 3 }\n", "rules[0] (id 'a')",
     "args.path", "pattern"),
    ("[[rules]]\nid = 'a'\neffect = 'deny'\ntool = 'execute'\ncommand = 'rm *'\n",
     "rules[0] (id 'a')", "command", "declares a shell argument"),
    ("[tools.execute]\nshell = 'command'\n[[rules]]\nid = 'a'\neffect = 'deny'\n"
     "tool = 'execute'\ncommand = []\n", "rules[0] (id 'a')", "command", "command pattern"),
    ("[[rules]]\nid = 'a'\neffect = 'deny'\nrisk = 'high'\ncolour = 'red'\n",
     "rules[0] (id 'a')", "colour", "unknown key"),
])
def test_errors_name_file_rule_and_field(text: str, rule: str | None, field: str,
                                         fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(text, source="team/signoff.toml")
    error = info.value
    assert error.code == "policy_invalid"
    assert error.file == "team/signoff.toml"
    assert error.rule == rule
    assert error.field == field
    assert fragment in str(error)
    assert str(error).startswith("team/signoff.toml")


def test_bad_toml_names_the_file() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy("[policy\n", source="x.toml")
    assert "x.toml" in str(info.value) and "TOML" in str(info.value)


def test_missing_file_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as info:
        Policy.load(tmp_path / "nope.toml")
    assert info.value.code == "policy_unreadable"


@pytest.mark.parametrize(("text", "seconds"), [
    ("30m", 1800.0), ("1h", 3600.0), ("1h30m", 5400.0), ("2d", 172800.0), ("45s", 45.0),
    (90, 90.0), ("never", None),
])
def test_durations(text: str | int, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "1x", "0s", "-1h", "1.5h", True])
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError, match=r"duration|positive"):
        parse_duration(text)
