"""Every coding-agent preset judges its shell tool exactly as the starter's ``execute``, on
the shell corpora (real agents' commands, GTFOBins, developers' commands), in every review
mode: a harness's tool name changes nothing about what a command may do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit import judge_shell
from signoff import Effect
from signoff.model import ReviewMode, Verdict
from signoff.policy import Policy
from signoff.policy.starter import starter_toml

DATA = Path(__file__).resolve().parents[1] / "data"
# Each preset and the name its harness gives its shell tool.
SHELLS = {"claude-code": "Bash", "codex": "Bash", "gemini": "run_shell_command"}


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


@pytest.mark.slow  # every corpus command, per preset and mode: seconds each
@pytest.mark.parametrize("preset", sorted(SHELLS))
@pytest.mark.parametrize("mode", [ReviewMode.MANUAL, ReviewMode.AUTO, ReviewMode.FULL])
def test_the_shell_tool_is_judged_as_the_starters_execute(tmp_path: Path, preset: str,
                                                          mode: ReviewMode) -> None:
    commands = _corpus()
    assert len(commands) > 1600
    differ, effects = [], set()
    # A fresh pair every 40 commands: each policy's reviewer has its own budget of reviews
    # a minute (auto mode), which must not run out for one of them and not the other.
    for start in range(0, len(commands), 40):
        starter = Policy.from_toml(starter_toml(str(tmp_path)))
        harness = Policy.from_toml(starter_toml(str(tmp_path), preset))
        for command in commands[start:start + 40]:
            theirs = judge_shell(harness, command, mode, tool=SHELLS[preset])
            effects.add(theirs.effect)
            if _shape(judge_shell(starter, command, mode)) != _shape(theirs):
                differ.append(command)
    assert differ == []
    # not vacuous: the corpus gets every kind of answer
    assert Effect.ALLOW in effects and (Effect.DENY in effects or Effect.ASK in effects)
