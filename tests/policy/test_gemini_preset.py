"""The gemini preset: Gemini CLI's ``run_shell_command`` is judged exactly as the
starter's ``execute`` on the shell corpora (real agents' commands, GTFOBins, developers'
commands), and its file tools as the harness sends them."""

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
def test_run_shell_command_is_judged_as_the_starters_execute(
        tmp_path: Path, mode: ReviewMode) -> None:
    commands = _corpus()
    assert len(commands) > 1600
    differ, effects = [], set()
    # A fresh pair every 40 commands: each policy's reviewer has its own budget of reviews
    # a minute (auto mode), which must not run out for one of them and not the other.
    for start in range(0, len(commands), 40):
        starter = Policy.from_toml(starter_toml(str(tmp_path)))
        gemini = Policy.from_toml(starter_toml(str(tmp_path), "gemini"))
        for command in commands[start:start + 40]:
            theirs = judge_shell(gemini, command, mode, tool="run_shell_command")
            effects.add(theirs.effect)
            if _shape(judge_shell(starter, command, mode)) != _shape(theirs):
                differ.append(command)
    assert differ == []
    # not vacuous: the corpus gets every kind of answer
    assert Effect.ALLOW in effects and (Effect.DENY in effects or Effect.ASK in effects)


def _judge(policy: Policy, tool: str, args: dict[str, object],
           mode: ReviewMode | None = None) -> Verdict:
    context = RunContext(thread_id="t") if mode is None \
        else RunContext(thread_id="t", review_mode=mode)
    return policy.evaluate(ToolCall(id="c", name=tool, args=args), context)


def test_the_file_tools_as_gemini_cli_sends_them(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "a.py").write_text("x = 1\n", "utf-8")
    gemini = Policy.from_toml(starter_toml(str(root), "gemini"))
    for tool, args in [("read_file", {"file_path": str(root / "a.py")}),
                       ("read_file", {"file_path": "a.py"}),  # relative: to the project
                       ("read_many_files", {"include": ["a.py", "src/**/*.py"]}),
                       ("list_directory", {"dir_path": str(root)}),
                       ("glob", {"pattern": "**/*.py"}),
                       ("glob", {"pattern": "*.py", "dir_path": "src"}),
                       ("grep_search", {"pattern": "x", "dir_path": str(root),
                                        "include_pattern": "*.py"}),
                       ("write_todos", {"todos": []}),
                       ("read_background_output", {"pid": 1})]:
        assert _judge(gemini, tool, args).effect is Effect.ALLOW, (tool, args)
    env = _judge(gemini, "read_file", {"file_path": str(root / ".env")})
    assert (env.effect, env.mandatory) == (Effect.ASK, True)
    for tool, args in [("write_file", {"file_path": str(root / "b.py"), "content": "y"}),
                       ("replace", {"file_path": str(root / "a.py"), "old_string": "1",
                                    "new_string": "2", "instruction": "bump"}),
                       ("web_fetch", {"prompt": "summarise https://example.org"}),
                       ("google_web_search", {"query": "q"})]:
        verdict = _judge(gemini, tool, args)
        assert (verdict.effect, verdict.code) == (Effect.ASK, "gated"), tool
    settings = _judge(gemini, "write_file", {
        "file_path": str(root / ".gemini" / "settings.json"), "content": "{}"})
    assert (settings.effect, settings.code, settings.mandatory) == \
        (Effect.ASK, "protected_path", True)
    for tool, args in [("read_file", {"file_path": "/etc/passwd"}),
                       ("glob", {"pattern": "../*"}),
                       ("glob", {"pattern": "*", "dir_path": "/etc"}),
                       ("list_directory", {"dir_path": str(tmp_path)})]:
        assert _judge(gemini, tool, args).effect is not Effect.ALLOW, (tool, args)
    # the shell's directory is judged, and a command's paths resolve against it
    outside = _judge(gemini, "run_shell_command", {"command": "cat notes", "dir_path": "/etc"})
    assert outside.effect is not Effect.ALLOW
    inside = _judge(gemini, "run_shell_command", {"command": "ls", "dir_path": "src"})
    assert inside.effect is Effect.ALLOW
    mcp = _judge(gemini, "mcp_github_create_issue", {"title": "x"})
    assert (mcp.effect, mcp.code) == (Effect.ASK, "unknown_tool")
    subagent = _judge(gemini, "invoke_agent", {"agent_name": "a", "prompt": "p"})
    assert (subagent.effect, subagent.code) == (Effect.ASK, "unknown_tool")
    # in full mode the gated tools run without review; protected paths still ask
    full = _judge(gemini, "write_file", {"file_path": str(root / "b.py"), "content": "y"},
                  ReviewMode.FULL)
    assert full.effect is Effect.ALLOW

