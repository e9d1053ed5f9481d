"""Ordinary developer commands under the read-only developer policy: how many run unasked.

tests/data/dev_commands.txt holds read-only commands a developer types every
day (git log/diff/show, ls, grep, rg, find, sed -n, awk, pipelines, pytest).
Each is evaluated in manual mode under ``dev_policy_toml`` (bench/agent_workload.py),
the policy a user writes from docs/policy.md to allow exactly such commands,
in a workspace holding the files the commands name. The count of allows may
only go up: a change to the shell models that makes the policy ask for more
of these commands is a regression, whatever else it fixes.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from signoff import Effect, Policy, RunContext, ToolCall
from signoff.model import ReviewMode

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from agent_workload import dev_policy_toml

CORPUS = Path(__file__).resolve().parents[1] / "data" / "dev_commands.txt"

# Allows measured on commit 5aa3192 (HEAD when the corpus was written, before the
# shell-model rewrite of Issue 11), of the 430 commands in CORPUS.
BASELINE = 389

_FILES = (
    "README.md", "setup.py", "setup.cfg", "pyproject.toml", "requirements.txt", "Makefile",
    ".gitignore", "CHANGELOG.md", "LICENSE", "a.txt", "b.txt", "f", ".git/HEAD",
    "src/app/__init__.py", "src/app/main.py", "src/app/main_old.py", "src/app/utils.py",
    "src/app/models.py", "tests/test_main.py", "tests/test_utils.py", "docs/index.md",
    "data/sample.csv", "data/sample.txt", "data/numbers.txt", "data/names.txt",
    "data/table.tsv", "logs/test.log",
)  # fmt: skip


def commands() -> list[str]:
    return [line for line in CORPUS.read_text("utf-8").splitlines() if line.strip()]


def make_workspace(root: Path) -> None:
    """The files the corpus names, so path checks see a real project."""
    for name in _FILES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{name}\n", encoding="utf-8")


def allowed(root: Path) -> tuple[list[str], list[tuple[str, tuple[str, ...]]]]:
    """The corpus split into allowed commands and the others with their reason codes."""
    policy = Policy.from_toml(dev_policy_toml(str(root)), source="dev.toml")
    yes: list[str] = []
    no: list[tuple[str, tuple[str, ...]]] = []
    for command in commands():
        verdict = policy.evaluate(
            ToolCall(id="c1", name="execute", args={"command": command}),
            RunContext(review_mode=ReviewMode.MANUAL, thread_id=f"dev-{uuid.uuid4().hex}"),
        )
        if verdict.effect is Effect.ALLOW:
            yes.append(command)
        else:
            no.append((command, tuple(r.code or r.step.value for r in verdict.reasons)))
    return yes, no


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "project"
    make_workspace(workspace)
    return workspace.resolve()


def test_the_corpus_is_large_and_distinct() -> None:
    lines = commands()
    assert len(lines) >= 300
    assert len(set(lines)) == len(lines)


def test_no_fewer_developer_commands_are_allowed_than_before(root: Path) -> None:
    yes, no = allowed(root)
    total = len(yes) + len(no)
    print(f"\nbefore: {BASELINE}, now: {len(yes)} of {total} allowed")
    asked = "\n".join(f"  {','.join(dict.fromkeys(codes))}\t{cmd}" for cmd, codes in no)
    assert len(yes) >= BASELINE, (
        f"before: {BASELINE}, now: {len(yes)} of {total}; not allowed:\n{asked}"
    )


def test_rm_stays_denied_in_the_corpus_workspace(root: Path) -> None:
    """The allow count means nothing if the deny rule stopped working."""
    policy = Policy.from_toml(dev_policy_toml(str(root)), source="dev.toml")
    for command in ("rm -rf src", "ls && rm a.txt", "find . -name '*.pyc' | xargs rm"):
        verdict = policy.evaluate(
            ToolCall(id="c1", name="execute", args={"command": command}),
            RunContext(review_mode=ReviewMode.MANUAL, thread_id=f"dev-{uuid.uuid4().hex}"),
        )
        assert verdict.effect is Effect.DENY, (command, verdict.effect, verdict.reasons)
