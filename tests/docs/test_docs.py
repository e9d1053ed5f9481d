"""The docs are read by people who copy from them: their examples must work."""

from __future__ import annotations

import re
from pathlib import Path

from signoff.policy import parse_policy

DOCS = Path(__file__).parents[2] / "docs"
README = Path(__file__).parents[2] / "README.md"


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.DOTALL)


def test_policy_reference_example_loads() -> None:
    blocks = _blocks((DOCS / "policy.md").read_text("utf-8"), "toml")
    assert blocks
    config = parse_policy(blocks[0], source="docs/policy.md")
    assert {r.id for r in config.rules} == {"no-rm", "safe-shell", "env-files", "docs-site",
                                            "web"}


def test_every_policy_key_is_documented() -> None:
    text = (DOCS / "policy.md").read_text("utf-8")
    keys = {
        "version", "default_review_mode", "ceiling", "gated", "unknown_tools",
        "clarification_tool", "unattended_asks", "default_expires", "default_approvals",
        "default_roles", "root", "name", "outside", "allowlist", "mandatory", "risk", "paths",
        "writes", "shell", "cwd", "description", "id", "effect", "tool", "command", "args",
        "roles", "approvals", "expires", "reason", "always_ask", "sensitive",
        "sensitive_defaults", "secrets", "virtual", "content", "edit",
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
    for page in [README, *DOCS.rglob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)\)", page.read_text("utf-8")):
            assert (page.parent / target).exists(), f"{page.name} -> {target}"


def test_readme_absolute_links_name_files_of_the_repository() -> None:
    """README's links are absolute (it is also the package's page); each names a file or
    folder of this repository, and an anchor a heading of that page."""
    base = r"https://github\.com/signoff-dev/signoff/(?:blob|raw|tree)/main/"
    links = re.findall(rf"\]\({base}([^)#\s]+)(?:#([^)\s]+))?\)", README.read_text("utf-8"))
    assert len(links) > 10
    for path, anchor in links:
        assert (README.parent / path).exists(), path
        if anchor:
            headings = re.findall(r"^#+ (.*)$", (README.parent / path).read_text("utf-8"),
                                  flags=re.M)
            assert anchor in {_slug(h) for h in headings}, f"{path}#{anchor}"


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_docs_anchors_resolve() -> None:
    """A link to ``page.md#section`` names a heading that page has."""
    checked = 0
    for page in [README, *DOCS.rglob("*.md")]:
        for target, anchor in re.findall(r"\]\(([^)#:\s]*)#([^)\s]+)\)", page.read_text("utf-8")):
            linked = page.parent / target if target else page
            if linked.suffix != ".md":
                continue
            headings = re.findall(r"^#+ (.*)$", linked.read_text("utf-8"), flags=re.M)
            assert anchor in {_slug(h) for h in headings}, f"{page.name} -> {target}#{anchor}"
            checked += 1
    assert checked > 10


def test_the_starter_policy_allows_no_example_of_the_shell_limits(tmp_path: Path) -> None:
    """docs/shell.md "Limits worth knowing" lists what remains; none of it is allowed."""
    from signoff import Policy, ToolCall
    from signoff.policy.starter import starter_toml

    text = (DOCS / "shell.md").read_text("utf-8")
    section = text.split("## Limits worth knowing", 1)[1].split("\n## ", 1)[0]
    examples = [line for block in _blocks(section, "sh") for line in block.splitlines() if line]
    assert len(examples) >= 4
    policy = Policy.from_toml(starter_toml(str(tmp_path)))
    for example in examples:
        verdict = policy.evaluate(ToolCall(id="c", name="execute", args={"command": example}))
        assert verdict.effect.value != "allow", example


def test_review_page_examples_are_what_the_code_does() -> None:
    """docs/review.md: its signoff.toml loads with the LLM reviewer, its schema is the one
    answers are checked against, and every [review] key is in the policy reference."""
    import dataclasses
    import json

    from signoff.review import VERDICT_SCHEMA, ReviewConfig

    text = (DOCS / "review.md").read_text("utf-8")
    config = parse_policy(_blocks(text, "toml")[0], source="docs/review.md")
    assert config.review.reviewer == "openai" and config.review.model
    schemas = [json.loads(b) for b in _blocks(text, "json") if '"additionalProperties"' in b]
    assert schemas == [VERDICT_SCHEMA]
    reference = (DOCS / "policy.md").read_text("utf-8").split("## `[review]`", 1)[1]
    for field in dataclasses.fields(ReviewConfig):
        assert f"| `{field.name}` |" in reference, field.name
