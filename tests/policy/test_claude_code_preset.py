"""The claude-code preset: Claude Code's file tools as the harness sends them; its
``Bash`` on the shell corpora is ``test_preset_parity.py``'s."""

from __future__ import annotations

from pathlib import Path

from signoff import Effect
from signoff.model import ReviewMode, RunContext, ToolCall, Verdict
from signoff.policy import Policy
from signoff.policy.starter import starter_toml


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
