"""The docs are read by people who copy from them: their examples must work."""

from __future__ import annotations

import re
from pathlib import Path

from signoff.policy import parse_policy

DOCS = Path(__file__).parents[1] / "docs"
README = Path(__file__).parents[1] / "README.md"


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.DOTALL)


def test_policy_reference_example_loads() -> None:
    blocks = _blocks((DOCS / "policy.md").read_text("utf-8"), "toml")
    assert blocks
    config = parse_policy(blocks[0], source="docs/policy.md")
    assert {r.id for r in config.rules} == {"no-rm", "safe-shell", "env-files", "web"}


def test_every_policy_key_is_documented() -> None:
    text = (DOCS / "policy.md").read_text("utf-8")
    keys = {
        "version", "default_review_mode", "ceiling", "gated", "unknown_tools",
        "clarification_tool", "unattended_asks", "default_expires", "default_approvals",
        "default_roles", "root", "name", "outside", "allowlist", "mandatory", "risk", "paths",
        "writes", "shell", "cwd", "description", "id", "effect", "tool", "command", "args",
        "roles", "approvals", "expires", "reason",
    }
    for key in keys:
        assert f"| `{key}` |" in text, key


def test_readme_commands_are_the_ci_commands() -> None:
    readme = README.read_text("utf-8")
    ci = (README.parent / ".ci" / "run").read_text("utf-8")
    commands = [b.strip() for b in _blocks(readme, "sh")[:2]]
    assert len(commands) == 2
    for command in commands:
        assert command in ci, command


def test_docs_links_resolve() -> None:
    for page in [README, *DOCS.glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)\)", page.read_text("utf-8")):
            assert (page.parent / target).exists(), f"{page.name} -> {target}"
