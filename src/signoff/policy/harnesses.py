"""The agent harnesses' settings, permission, hook and MCP files: protected paths.

What these files hold decides what an agent may run without asking (an auto-approve
setting, an MCP server, a hook), so writing one is a ``protected_path``
(``signoff.policy.protected``). Each entry is a file a harness reads these from, as a
pattern matched like the sensitive paths: without a leading ``/`` at any depth. So:

* a project form (``.claude/settings.json``, ``.cursor/mcp.json``) is the user form in a
  home directory too (``~/.claude/settings.json``);
* a user form under ``~/.config`` is anchored there (``.config/zed/settings.json``), so a
  project directory that happens to be called ``zed`` is not taken for it;
* an editor's user directory is named from the application's own folder
  (``Code/User/settings.json`` is VS Code's under ``~/.config`` and ``~/Library/Application
  Support`` alike); an extension's by its storage folder
  (``saoudrizwan.claude-dev/settings/**``);
* managed and system settings by their folder (``claude-code/`` in ``/etc``,
  ``ClaudeCode/`` in ``/Library/Application Support``, ``gemini-cli/``).

To add a file, put its pattern in its harness's tuple (or a new harness: its name is what
a verdict's reason says), give a glob an example file in ``EXAMPLES`` of
``tests/policy/test_protected_paths.py`` (every entry is written there in each shell
spelling), and name it in docs/shell.md's "Protected paths". A user adds one without a
release with ``[policy] protected`` (``extra_pattern``).
"""

from __future__ import annotations

from collections.abc import Mapping

# By harness, named as a verdict's reason names it.
HARNESSES: Mapping[str, tuple[str, ...]] = {
    "Claude Code": (".claude/settings.json", ".claude/settings.local.json", ".claude.json",
                    ".mcp.json", ".claude/hooks/**", "claude-code/managed-settings.json",
                    "claude-code/managed-mcp.json", "ClaudeCode/managed-settings.json",
                    "ClaudeCode/managed-mcp.json"),
    "Cursor": (".cursor/mcp.json", ".cursor/cli.json", ".cursor/cli-config.json",
               ".cursor/permissions.json", ".cursor/hooks.json",
               ".config/cursor/cli-config.json", "Cursor/User/settings.json",
               "Cursor/User/mcp.json"),
    "VS Code": (".vscode/settings.json", ".vscode/mcp.json", "*.code-workspace",
                "Code/User/settings.json", "Code/User/mcp.json",
                "Code - Insiders/User/settings.json", "Code - Insiders/User/mcp.json",
                "VSCodium/User/settings.json", "VSCodium/User/mcp.json"),
    "Codex": (".codex/config.toml", ".codex/*.config.toml", ".codex/requirements.toml",
              ".codex/hooks.json", ".codex/rules/**", "codex/managed_config.toml",
              "codex/requirements.toml"),
    "Gemini CLI": (".gemini/settings.json", "gemini-cli/settings.json",
                   "gemini-cli/system-defaults.json"),
    "Windsurf": (".codeium/windsurf/mcp_config.json", ".codeium/windsurf/hooks.json",
                 ".windsurf/hooks.json", "Windsurf/User/settings.json"),
    "Continue": (".continue/config.yaml", ".continue/config.json", ".continue/config.ts",
                 ".continue/permissions.yaml", ".continue/mcpServers/**"),
    "Zed": (".zed/settings.json", ".config/zed/settings.json"),
    "Cline": ("saoudrizwan.claude-dev/settings/**", "cline_mcp_settings.json",
              ".clinerules/hooks/**"),
    "OpenCode": ("opencode.json", "opencode.jsonc", ".opencode/opencode.json",
                 ".config/opencode/opencode.json"),
    "Roo Code": (".roo/mcp.json",),
    "Kiro": (".kiro/settings/mcp.json",),
    "Amp": (".amp/settings.json", ".config/amp/settings.json"),
}
DEFAULT_PROTECTED: tuple[str, ...] = tuple(p for files in HARNESSES.values() for p in files)
_HARNESS_OF = {p: name for name, files in HARNESSES.items() for p in files}


def describe(pattern: str) -> str:
    """What a protected pattern is, as a verdict's reason says it: whose setting, or one
    ``[policy] protected`` added."""
    owner = _HARNESS_OF.get(pattern)
    if owner is None:
        return f"a protected path ({pattern}, [policy] protected)"
    return f"a setting of an agent harness ({owner}: {pattern}): it decides what the agent " \
           "may run without asking"


def extra_pattern(pattern: str) -> str:
    """A ``[policy] protected`` pattern as matched: ``~/x`` is ``x`` in any home (the
    agent's tools may run as another user than the gate)."""
    return pattern[2:] if pattern.startswith("~/") else pattern
