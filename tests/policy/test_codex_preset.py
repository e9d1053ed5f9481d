"""The codex preset: Codex's tools as its hooks send them (``apply_patch`` with the whole
patch); its ``Bash`` on the shell corpora is ``test_preset_parity.py``'s."""

from __future__ import annotations

from pathlib import Path

from signoff import Effect
from signoff.model import ReviewMode, RunContext, ToolCall, Verdict
from signoff.policy import Policy
from signoff.policy.starter import starter_toml


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
