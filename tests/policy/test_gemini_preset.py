"""The gemini preset: Gemini CLI's file tools as the harness sends them; its
``run_shell_command`` on the shell corpora is ``test_preset_parity.py``'s."""

from __future__ import annotations

from pathlib import Path

from signoff import Effect
from signoff.model import ReviewMode, RunContext, ToolCall, Verdict
from signoff.policy import Policy
from signoff.policy.starter import starter_toml


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

