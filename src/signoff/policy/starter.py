"""The starter policies that ``signoff init`` writes and ``signoff demo`` runs on.

One template (``templates/signoff.toml``) holds the policy, the workspace and the rules;
a preset swaps its tool declarations (between ``# @tools`` and ``# @end tools``) for
those of a harness, and renames the path argument its rules match on. So the rules a
newcomer reads are the same whichever agent they start from.

An MCP server's preset (``mcp-filesystem``, ``mcp-git``) has no shell, so the template's
rules, which are about shell commands, cannot apply: its file brings the ``[mcp]`` table,
the server's tools under their namespaced names (``fs__write_file``) and its own rules in
their place, and keeps the template's ``[policy]`` and ``[workspace]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from signoff.errors import ConfigurationError

_OUTSIDE = 'outside = "approve"'
_EXAMPLE = """--tool execute --args '{"command": "ls -la"}'"""


@dataclass(frozen=True, slots=True)
class Preset:
    tools: str | None  # the template file of its [tools.*] tables; None: the template's own
    gated: tuple[str, ...]
    # what the file tools call their path argument, for the template's env-files rule
    path_argument: str = "path"
    # True: the tools file also holds the [mcp] table and the rules, which replace the
    # template's (shell) rules; the tool names it gates are the namespaced ones.
    own_rules: bool = False
    outside: str = "approve"  # [workspace] outside: allow | approve | deny
    example: str = _EXAMPLE  # the `signoff check` arguments the header shows
    # what the harness calls the template's shell and file-reading tools, for its rules
    shell_tool: str = "execute"
    read_tool: str = "read_file"


GATED = ("execute", "run_in_background", "schedule_task")
PRESETS = {
    "default": Preset(tools=None, gated=GATED),
    # deepagents (create_deep_agent): virtual file paths, `task` subagents, `delete` reviewed
    "deepagents": Preset(tools="deepagents.toml", path_argument="file_path",
                         gated=(*GATED, "delete")),
    # @modelcontextprotocol/server-filesystem behind signoff mcp-proxy: the tools that
    # change a file's content are reviewed, a path outside the workspace is denied
    "mcp-filesystem": Preset(
        tools="mcp-filesystem.toml", own_rules=True, outside="deny",
        gated=("fs__write_file", "fs__edit_file", "fs__move_file"),
        example="""--tool fs__read_text_file --args '{"path": "README.md"}'"""),
    # mcp-server-git behind signoff mcp-proxy: reads allowed, the tools that change the
    # repository reviewed, a repo_path outside the workspace denied
    "mcp-git": Preset(
        tools="mcp-git.toml", own_rules=True, outside="deny",
        gated=("git__git_add", "git__git_commit", "git__git_reset", "git__git_create_branch",
               "git__git_checkout"),
        example="""--tool git__git_status --args '{"repo_path": "."}'"""),
    # Claude Code through `signoff hook claude-code`: its own tool names, the template's
    # shell rules on Bash; writes, commands and the web asked by review mode
    "claude-code": Preset(
        tools="claude-code.toml", path_argument="file_path", shell_tool="Bash",
        read_tool="Read",
        gated=("Bash", "Write", "Edit", "MultiEdit", "NotebookEdit", "WebFetch", "WebSearch"),
        example="""--tool Bash --args '{"command": "ls -la"}'"""),
    # Codex CLI through `signoff hook codex`: its shell tool as Bash, its edits as
    # apply_patch, both reviewed by mode; the template's shell rules on Bash
    "codex": Preset(
        tools="codex.toml", shell_tool="Bash", read_tool="view_image",
        gated=("Bash", "apply_patch"),
        example="""--tool Bash --args '{"command": "ls -la"}'"""),
    # Gemini CLI through `signoff hook gemini`: its own tool names, the template's shell
    # rules on run_shell_command; writes, commands and the web asked by review mode
    "gemini": Preset(
        tools="gemini.toml", path_argument="file_path", shell_tool="run_shell_command",
        gated=("run_shell_command", "write_file", "replace", "web_fetch",
               "google_web_search"),
        example="""--tool run_shell_command --args '{"command": "ls -la"}'"""),
}


def starter_toml(root: str, preset: str = "default") -> str:
    """The text of a starter ``signoff.toml`` with its workspace root set to ``root``."""
    try:
        chosen = PRESETS[preset]
    except KeyError:
        raise ConfigurationError(f"unknown preset {preset!r}: expected one of "
                                 f"{', '.join(PRESETS)}", code="unknown_preset") from None
    text = _template("signoff.toml")
    if chosen.tools is not None:
        head, rest = text.split("# @tools", 1)
        _, tail = rest.split("# @end tools", 1)
        if chosen.own_rules:
            text = f"{head}{_template(chosen.tools)}"
        else:
            text = f"{head}{_template(chosen.tools)}{tail}"
            text = text.replace('args = { path = "**/.env" }',
                                f'args = {{ {chosen.path_argument} = "**/.env" }}')
            text = text.replace('tool = "execute"', f'tool = "{chosen.shell_tool}"')
            text = text.replace('tool = "read_file"', f'tool = "{chosen.read_tool}"')
    text = text.replace(_gated_line(GATED), _gated_line(chosen.gated))
    # the same width, so the comment after the value stays where it was
    text = text.replace(_OUTSIDE, f'outside = "{chosen.outside}"'.ljust(len(_OUTSIDE)), 1)
    text = text.replace(_EXAMPLE, chosen.example, 1)
    return text.replace("__ROOT__", root.replace("\\", "\\\\").replace('"', '\\"'))


def _gated_line(names: tuple[str, ...]) -> str:
    return "gated = [" + ", ".join(f'"{name}"' for name in names) + "]"


def _template(name: str) -> str:
    return resources.files("signoff").joinpath(f"templates/{name}").read_text("utf-8")
