"""The codex preset: Codex's ``Bash`` is judged exactly as the starter's ``execute`` on
the shell corpora (real agents' commands, GTFOBins, developers' commands), and its other
tools as Codex's hooks send them (``apply_patch`` with the whole patch)."""

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
    # A fresh pair every 40 commands: each reviewer has its own budget a minute (auto).
    for start in range(0, len(commands), 40):
        starter = Policy.from_toml(starter_toml(str(tmp_path)))
        codex = Policy.from_toml(starter_toml(str(tmp_path), "codex"))
        for command in commands[start:start + 40]:
            theirs = judge_shell(codex, command, mode, tool="Bash")
            effects.add(theirs.effect)
            if _shape(judge_shell(starter, command, mode)) != _shape(theirs):
                differ.append(command)
    assert differ == []
    assert Effect.ALLOW in effects and (Effect.DENY in effects or Effect.ASK in effects)


def _judge(policy: Policy, tool: str, args: dict[str, object],
           mode: ReviewMode = ReviewMode.MANUAL) -> Verdict:
    return policy.evaluate(ToolCall(id="c", name=tool, args=args),
                           RunContext(thread_id="t", review_mode=mode))


def patch(header: str) -> dict[str, object]:
    return {"command": f"*** Begin Patch\n*** {header}\n+x\n*** End Patch\n"}


def test_codexs_other_tools_as_its_hooks_send_them(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    codex = Policy.from_toml(starter_toml(str(root), "codex"))
    edit = _judge(codex, "apply_patch", patch("Add File: notes.md"))
    assert (edit.effect, edit.code) == (Effect.ASK, "gated")
    assert _judge(codex, "apply_patch", patch("Add File: notes.md"), ReviewMode.FULL).effect \
        is Effect.ALLOW
    # a patch of a protected file needs a human in every mode
    for header in ("Update File: .codex/hooks.json", "Add File: /home/u/.codex/config.toml",
                   "Update File: src/.env", "Delete File: signoff.toml",
                   "Move to: .git/hooks/pre-commit"):
        verdict = _judge(codex, "apply_patch", patch(header), ReviewMode.FULL)
        assert (verdict.effect, verdict.mandatory) == (Effect.ASK, True), header
    assert _judge(codex, "view_image", {"path": str(root / "a.png")}).effect is Effect.ALLOW
    env = _judge(codex, "view_image", {"path": str(root / ".env")})
    assert (env.effect, env.mandatory) == (Effect.ASK, True)
    assert _judge(codex, "view_image", {"path": "/etc/shadow"}).effect is not Effect.ALLOW
    assert _judge(codex, "update_goal", {"status": "complete"}).effect is Effect.ALLOW
    mcp = _judge(codex, "mcp__github__create_issue", {"title": "x"})
    assert (mcp.effect, mcp.code) == (Effect.ASK, "unknown_tool")
    hooks = _judge(codex, "Bash", {"command": "echo {} > .codex/hooks.json"}, ReviewMode.FULL)
    assert (hooks.effect, hooks.code, hooks.mandatory) == (Effect.ASK, "protected_path", True)
