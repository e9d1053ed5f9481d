"""The claude-code preset: Claude Code's ``Bash`` is judged exactly as the starter's
``execute`` on the shell corpora (real agents' commands, GTFOBins, developers' commands),
and its file tools as the harness sends them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit import judge_shell
from signoff import Effect
from signoff.model import ReviewMode, RunContext, ToolCall, Verdict
from signoff.policy import Policy
from signoff.policy.starter import starter_toml

DATA = Path(__file__).resolve().parents[1] / "data"


def _corpus() -> list[str]:
    commands = [json.loads(line)["command"]
                for name in ("agent_commands.jsonl", "gtfobins-published.jsonl")
                for line in (DATA / name).read_text("utf-8").splitlines() if line.strip()]
    commands += [line for line in (DATA / "dev_commands.txt").read_text("utf-8").splitlines()
                 if line.strip() and not line.startswith("#")]
    return commands


def _shape(verdict: Verdict) -> tuple[object, ...]:
    return (verdict.effect, verdict.code, verdict.risk, verdict.mandatory,
            sorted((r.step.value, r.rule or "") for r in verdict.reasons))


@pytest.mark.parametrize("mode", [ReviewMode.MANUAL, ReviewMode.AUTO, ReviewMode.FULL])
def test_bash_is_judged_as_the_starters_execute(tmp_path: Path, mode: ReviewMode) -> None:
    commands = _corpus()
    assert len(commands) > 1600
    differ, effects = [], set()
    # A fresh pair every 40 commands: each policy's reviewer has its own budget of reviews
    # a minute (auto mode), which must not run out for one of them and not the other.
    for start in range(0, len(commands), 40):
        starter = Policy.from_toml(starter_toml(str(tmp_path)))
        claude = Policy.from_toml(starter_toml(str(tmp_path), "claude-code"))
        for command in commands[start:start + 40]:
            theirs = judge_shell(claude, command, mode, tool="Bash")
            effects.add(theirs.effect)
            if _shape(judge_shell(starter, command, mode)) != _shape(theirs):
                differ.append(command)
    assert differ == []
    # not vacuous: the corpus gets every kind of answer
    assert Effect.ALLOW in effects and (Effect.DENY in effects or Effect.ASK in effects)


def _judge(policy: Policy, tool: str, args: dict[str, object]) -> Verdict:
    return policy.evaluate(ToolCall(id="c", name=tool, args=args), RunContext(thread_id="t"))


def test_the_file_tools_as_claude_code_sends_them(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n", "utf-8")
    claude = Policy.from_toml(starter_toml(str(root), "claude-code"))
    assert _judge(claude, "Read", {"file_path": str(root / "a.py")}).effect is Effect.ALLOW
    assert _judge(claude, "Glob", {"pattern": "**/*.py", "path": str(root)}).effect \
        is Effect.ALLOW
    assert _judge(claude, "Grep", {"pattern": "x", "path": str(root), "glob": "*.py"}).effect \
        is Effect.ALLOW
    env = _judge(claude, "Read", {"file_path": str(root / ".env")})
    assert (env.effect, env.mandatory) == (Effect.ASK, True)
    for tool, args in [("Write", {"file_path": str(root / "b.py"), "content": "y"}),
                       ("Edit", {"file_path": str(root / "a.py"), "old_string": "1",
                                 "new_string": "2"}),
                       ("MultiEdit", {"file_path": str(root / "a.py"), "edits": []}),
                       ("NotebookEdit", {"notebook_path": str(root / "n.ipynb"),
                                         "new_source": "x"}),
                       ("WebFetch", {"url": "https://example.org", "prompt": "p"}),
                       ("WebSearch", {"query": "q"})]:
        verdict = _judge(claude, tool, args)
        assert (verdict.effect, verdict.code) == (Effect.ASK, "gated"), tool
    settings = _judge(claude, "Write", {"file_path": str(root / ".claude" / "settings.json"),
                                        "content": "{}"})
    assert (settings.effect, settings.code, settings.mandatory) == \
        (Effect.ASK, "protected_path", True)
    outside = _judge(claude, "Read", {"file_path": "/etc/passwd"})
    assert outside.effect is not Effect.ALLOW
    mcp = _judge(claude, "mcp__github__create_issue", {"title": "x"})
    assert (mcp.effect, mcp.code) == (Effect.ASK, "unknown_tool")
    assert _judge(claude, "Task", {"description": "d", "prompt": "p",
                                   "subagent_type": "general-purpose"}).effect is Effect.ALLOW
    assert _judge(claude, "TodoWrite", {"todos": []}).effect is Effect.ALLOW
    # in full mode the gated tools run without review; protected paths still ask
    full = claude.evaluate(ToolCall(id="c", name="Write", args={
        "file_path": str(root / "b.py"), "content": "y"}),
        RunContext(thread_id="t", review_mode=ReviewMode.FULL))
    assert full.effect is Effect.ALLOW
