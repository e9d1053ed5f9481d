"""Codex CLI: its ``PreToolUse`` / ``PostToolUse`` command hooks answered by the gate
(``hook``), and the hook entries and their trust written into its files (``hooks_file``)."""

from signoff.adapters.codex.hook import AGENT, Codex, post_tool_use, pre_tool_use
from signoff.adapters.codex.hooks_file import install_hooks

__all__ = ["AGENT", "Codex", "install_hooks", "post_tool_use", "pre_tool_use"]
