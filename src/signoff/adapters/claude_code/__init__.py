"""Claude Code: its ``PreToolUse`` / ``PostToolUse`` hooks answered by the gate
(``hook``), and the hook entries written into its settings (``settings``)."""

from signoff.adapters.claude_code.hook import (
    AGENT,
    ClaudeCode,
    HookOptions,
    call_id_for,
    deny,
    post_tool_use,
    pre_tool_use,
)
from signoff.adapters.claude_code.settings import install_hooks

__all__ = ["AGENT", "ClaudeCode", "HookOptions", "call_id_for", "deny", "install_hooks",
           "post_tool_use", "pre_tool_use"]
