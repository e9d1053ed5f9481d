"""The MCP presets of ``signoff init``: ``mcp-filesystem`` (@modelcontextprotocol/
server-filesystem 2026.8.31) and ``mcp-git`` (mcp-server-git 2026.10.19), judged as the
proxy presents their tools (``fs__read_text_file``, ``git__git_status``).

SERVER_TOOLS is what each server listed (``tools/list``: the input schema's properties
and the annotations that can add care), so the presets are checked against the real
argument names, and against the servers' own hints."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from signoff import Policy, PolicyError, ToolCall
from signoff.cli import main
from signoff.model import Effect, Risk, Verdict
from signoff.policy.hints import ToolHints
from signoff.policy.modes import trusted_context
from signoff.policy.starter import PRESETS, starter_toml

# tools/list of @modelcontextprotocol/server-filesystem 2026.8.31: properties, and the
# tools it annotates destructiveHint: true (every tool says openWorldHint: false).
FS_TOOLS: dict[str, tuple[str, ...]] = {
    "read_file": ("path", "tail", "head"),
    "read_text_file": ("path", "tail", "head"),
    "read_media_file": ("path",),
    "read_multiple_files": ("paths",),
    "write_file": ("path", "content"),
    "edit_file": ("path", "edits", "dryRun"),
    "create_directory": ("path",),
    "list_directory": ("path",),
    "list_directory_with_sizes": ("path", "sortBy"),
    "directory_tree": ("path", "excludePatterns"),
    "move_file": ("source", "destination"),
    "search_files": ("path", "pattern", "excludePatterns"),
    "get_file_info": ("path",),
    "list_allowed_directories": (),
}
FS_DESTRUCTIVE = ("write_file", "edit_file", "move_file")
# tools/list of mcp-server-git 2026.10.19 (openWorldHint: false throughout).
GIT_TOOLS: dict[str, tuple[str, ...]] = {
    "git_status": ("repo_path",),
    "git_diff_unstaged": ("repo_path", "context_lines"),
    "git_diff_staged": ("repo_path", "context_lines"),
    "git_diff": ("repo_path", "target", "context_lines"),
    "git_commit": ("repo_path", "message"),
    "git_add": ("repo_path", "files"),
    "git_reset": ("repo_path",),
    "git_log": ("repo_path", "max_count", "start_timestamp", "end_timestamp"),
    "git_create_branch": ("repo_path", "branch_name", "base_branch"),
    "git_checkout": ("repo_path", "branch_name"),
    "git_show": ("repo_path", "revision"),
    "git_branch": ("repo_path", "branch_type", "contains", "not_contains"),
}
GIT_DESTRUCTIVE = ("git_reset",)
SERVERS = {"mcp-filesystem": ("fs", FS_TOOLS, FS_DESTRUCTIVE),
           "mcp-git": ("git", GIT_TOOLS, GIT_DESTRUCTIVE)}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("hello\n")
    (ws / ".env").write_text("KEY=1\n")
    (ws / "link").symlink_to("/etc")  # a symlink out of the workspace is still outside
    return ws


def _policy(root: Path, preset: str) -> Policy:
    return Policy.from_toml(starter_toml(str(root), preset), source=f"{preset}.toml")


def _judge(policy: Policy, tool: str, args: dict[str, Any], mode: str | None = None,
           interaction: str | None = None) -> Verdict:
    return policy.evaluate(ToolCall(id="c", name=tool, args=args),
                           trusted_context(thread_id="t", review_mode=mode,
                                           interaction_mode=interaction))


# ---- the presets match the servers -------------------------------------------------------

@pytest.mark.parametrize("preset", sorted(SERVERS))
def test_every_tool_of_the_server_is_declared_with_its_real_arguments(
        root: Path, preset: str) -> None:
    server, tools, _ = SERVERS[preset]
    config = _policy(root, preset).config
    assert config.mcp.server == server
    assert config.mcp.destructive == "gated"
    assert set(config.tools) == {config.mcp.policy_name(name) for name in tools}
    for name, properties in tools.items():
        spec = config.tools[config.mcp.policy_name(name)]
        named = {*spec.paths, *([spec.cwd] if spec.cwd else []),
                 *([spec.content] if spec.content else [])}
        assert named <= set(properties), name
        assert spec.shell is None and not spec.virtual
    assert set(config.gated) <= set(config.tools)  # every gated tool is a tool of the server
    assert config.workspace is not None and config.workspace.outside == "deny"
    assert not any(spec.shell for spec in config.tools.values())


@pytest.mark.parametrize("preset", sorted(SERVERS))
def test_the_servers_own_hints_change_no_verdict(root: Path, preset: str) -> None:
    """Every tool the server marks destructive is gated by the preset already: a policy
    that has learnt the server's annotations judges exactly as `signoff check` does."""
    _, tools, destructive = SERVERS[preset]
    config = _policy(root, preset).config
    assert {config.mcp.policy_name(name) for name in destructive} <= set(config.gated)
    plain, hinted = _policy(root, preset), _policy(root, preset)
    hinted.hints.update({
        config.mcp.policy_name(name): ToolHints.from_annotations(
            {"readOnlyHint": name not in destructive, "destructiveHint": name in destructive,
             "openWorldHint": False})
        for name in tools})
    assert len(hinted.hints) == len(destructive)
    lists = {"paths", "files", "edits", "excludePatterns"}
    for name, properties in tools.items():
        args = {p: ["README.md"] if p in lists else "." if p == "repo_path" else "README.md"
                for p in properties}
        for mode in ("manual", "full"):
            a = _judge(plain, config.mcp.policy_name(name), args, mode)
            b = _judge(hinted, config.mcp.policy_name(name), args, mode)
            assert (a.effect, a.code) == (b.effect, b.code), (name, mode)


def test_the_mcp_presets_keep_the_template_policy_and_workspace(root: Path) -> None:
    """Only the gated list, the outside choice and the header's example differ from the
    default starter above the tools; the template's shell rules are not there."""
    default = starter_toml(str(root)).split("# @tools", 1)[0].splitlines()
    for preset in SERVERS:
        text = starter_toml(str(root), preset)
        head = text.split("\n[mcp]", 1)[0].splitlines()[:len(default)]
        changed = [(a, b) for a, b in zip(default, head, strict=True) if a != b]
        assert [a.split()[0] for a, _ in changed] == ["#", "gated", "outside"], preset
        assert "execute" not in text and "read-only-shell" not in text
        assert Policy.from_toml(text).config.workspace is not None


# ---- mcp-filesystem ----------------------------------------------------------------------

@pytest.mark.parametrize(("tool", "args", "effect", "code"), [
    # reads inside, absolute and relative (resolved against the root, as the server does)
    ("read_text_file", {"path": "{root}/README.md"}, Effect.ALLOW, "allowed"),
    ("read_text_file", {"path": "README.md", "head": 3}, Effect.ALLOW, "allowed"),
    ("read_text_file", {"path": "src/../README.md"}, Effect.ALLOW, "allowed"),
    ("read_file", {"path": "README.md"}, Effect.ALLOW, "allowed"),
    ("read_media_file", {"path": "src/logo.png"}, Effect.ALLOW, "allowed"),
    ("read_multiple_files", {"paths": ["README.md", "src/a.py"]}, Effect.ALLOW, "allowed"),
    ("list_directory", {"path": "."}, Effect.ALLOW, "allowed"),
    ("list_directory_with_sizes", {"path": "src", "sortBy": "size"}, Effect.ALLOW, "allowed"),
    ("directory_tree", {"path": "{root}", "excludePatterns": ["**/node_modules"]},
     Effect.ALLOW, "allowed"),
    ("search_files", {"path": ".", "pattern": "**/*.py"}, Effect.ALLOW, "allowed"),
    ("get_file_info", {"path": "README.md"}, Effect.ALLOW, "allowed"),
    ("list_allowed_directories", {}, Effect.ALLOW, "allowed"),
    ("create_directory", {"path": "src/new/deeper"}, Effect.ALLOW, "allowed"),
    # outside: denied, whichever way the path gets there
    ("read_text_file", {"path": "/etc/passwd"}, Effect.DENY, "outside_workspace"),
    ("read_text_file", {"path": "../outside.txt"}, Effect.DENY, "outside_workspace"),
    ("read_text_file", {"path": "src/../../outside.txt"}, Effect.DENY, "outside_workspace"),
    ("read_text_file", {"path": "~/.bashrc"}, Effect.DENY, "outside_workspace"),
    ("read_text_file", {"path": "link/passwd"}, Effect.DENY, "outside_workspace"),
    ("read_text_file", {"path": "{root}_evil/x"}, Effect.DENY, "outside_workspace"),
    ("list_directory", {"path": "/"}, Effect.DENY, "outside_workspace"),
    ("search_files", {"path": "..", "pattern": "*"}, Effect.DENY, "outside_workspace"),
    ("create_directory", {"path": "/tmp/x"}, Effect.DENY, "outside_workspace"),
    ("write_file", {"path": "/tmp/x", "content": "x"}, Effect.DENY, "outside_workspace"),
    # writes: asked by review mode
    ("write_file", {"path": "notes.md", "content": "x"}, Effect.ASK, "gated"),
    ("edit_file", {"path": "README.md", "edits": [{"oldText": "a", "newText": "b"}]},
     Effect.ASK, "gated"),
    ("edit_file", {"path": "README.md", "edits": [], "dryRun": False}, Effect.ASK, "gated"),
    ("move_file", {"source": "README.md", "destination": "src/README.md"},
     Effect.ASK, "gated"),
    # a preview writes nothing
    ("edit_file", {"path": "README.md", "edits": [], "dryRun": True},
     Effect.ALLOW, "rule_allow"),
    ("edit_file", {"path": "/etc/hosts", "edits": [], "dryRun": True},
     Effect.DENY, "outside_workspace"),
    # a tool a later version adds is asked
    ("delete_file", {"path": "README.md"}, Effect.ASK, "unknown_tool"),
])
def test_filesystem_verdicts(root: Path, tool: str, args: dict[str, Any], effect: Effect,
                             code: str) -> None:
    policy = _policy(root, "mcp-filesystem")
    args = json.loads(json.dumps(args).replace("{root}", str(root)))
    verdict = _judge(policy, f"fs__{tool}", args)
    assert (verdict.effect, verdict.code) == (effect, code), verdict.message


def test_filesystem_outside_denial_names_the_path_and_the_workspace(root: Path) -> None:
    policy = _policy(root, "mcp-filesystem")
    verdict = _judge(policy, "fs__read_text_file", {"path": "/etc/passwd"}, "full")
    assert verdict.effect is Effect.DENY
    assert verdict.message == "Access denied: '/etc/passwd' is outside workspace 'workspace'"
    # one outside path among several denies the whole call, and says which one
    verdict = _judge(policy, "fs__read_multiple_files",
                     {"paths": ["README.md", "src/a.py", "../../etc/shadow"]}, "full")
    assert verdict.effect is Effect.DENY and verdict.code == "outside_workspace"
    assert "'../../etc/shadow'" in verdict.message and "'workspace'" in verdict.message
    # a move out of the workspace (or into it from outside) is denied, not asked
    for move in ({"source": "README.md", "destination": "/tmp/README.md"},
                 {"source": "/etc/passwd", "destination": "passwd"},
                 {"source": "README.md", "destination": "../README.md"}):
        verdict = _judge(policy, "fs__move_file", move, "full")
        assert verdict.effect is Effect.DENY and verdict.code == "outside_workspace", move


def test_filesystem_writes_follow_the_review_mode(root: Path) -> None:
    policy = _policy(root, "mcp-filesystem")
    write = {"path": "notes.md", "content": "new\n"}
    assert _judge(policy, "fs__write_file", write, "manual").effect is Effect.ASK
    assert _judge(policy, "fs__write_file", write, "full").effect is Effect.ALLOW
    assert _judge(policy, "fs__write_file", write, "manual",
                  "scheduled").effect is Effect.BLOCKED
    # a sensitive path is always asked, a move included (its source disappears)
    for tool, args in (("fs__write_file", {"path": "conftest.py", "content": "x"}),
                       ("fs__write_file", {"path": ".git/hooks/pre-commit", "content": "x"}),
                       ("fs__move_file", {"source": "x.py", "destination": "Makefile"})):
        verdict = _judge(policy, tool, args, "full")
        assert (verdict.effect, verdict.code) == (Effect.ASK, "sensitive_write"), args
    # the write shows its diff: write_file's content is its write evidence
    assert policy.config.tools["fs__write_file"].content == "content"


@pytest.mark.parametrize(("tool", "args"), [
    ("fs__read_text_file", {"path": ".env"}),
    ("fs__read_text_file", {"path": "{root}/.env"}),
    ("fs__read_text_file", {"path": "src/../.env"}),
    ("fs__read_file", {"path": "src/.env"}),
    ("fs__read_media_file", {"path": ".env"}),
    ("fs__get_file_info", {"path": ".env"}),
    ("fs__read_multiple_files", {"paths": ["README.md", ".env"]}),
    ("fs__write_file", {"path": ".env", "content": "KEY=2"}),
])
def test_filesystem_env_files_need_security(root: Path, tool: str,
                                            args: dict[str, Any]) -> None:
    policy = _policy(root, "mcp-filesystem")
    args = json.loads(json.dumps(args).replace("{root}", str(root)))
    for mode in ("manual", "full"):
        verdict = _judge(policy, tool, args, mode)
        assert (verdict.effect, verdict.code) == (Effect.ASK, "mandatory_ask"), (args, mode)
        assert verdict.mandatory and verdict.risk is Risk.CRITICAL
        assert verdict.roles == ("security",) and verdict.approvals == 2
        assert {r.rule for r in verdict.reasons} & {"env-files", "env-files-many"}
    assert _judge(policy, tool, args, "full", "autonomous").effect is Effect.BLOCKED


def test_filesystem_other_secrets_and_moves_of_env_are_asked_too(root: Path) -> None:
    """What the env-files rules do not name, the built-in secret and sensitive lists do."""
    policy = _policy(root, "mcp-filesystem")
    for tool, args, code in (
            ("fs__read_text_file", {"path": ".env.local"}, "secret_read"),
            ("fs__read_multiple_files", {"paths": ["a", "deploy/id_rsa"]}, "secret_read"),
            ("fs__move_file", {"source": ".env", "destination": "leak.txt"}, "sensitive_write"),
            ("fs__move_file", {"source": "x", "destination": "sub/.env"}, "sensitive_write")):
        verdict = _judge(policy, tool, args, "full")
        assert (verdict.effect, verdict.code) == (Effect.ASK, code), args
        assert verdict.mandatory


# ---- mcp-git -----------------------------------------------------------------------------

@pytest.mark.parametrize(("tool", "args", "effect", "code"), [
    ("git_status", {"repo_path": "{root}"}, Effect.ALLOW, "allowed"),
    ("git_status", {"repo_path": "."}, Effect.ALLOW, "allowed"),
    ("git_diff_unstaged", {"repo_path": ".", "context_lines": 5}, Effect.ALLOW, "allowed"),
    ("git_diff_staged", {"repo_path": "."}, Effect.ALLOW, "allowed"),
    ("git_diff", {"repo_path": ".", "target": "main"}, Effect.ALLOW, "allowed"),
    ("git_log", {"repo_path": ".", "max_count": 5}, Effect.ALLOW, "allowed"),
    ("git_show", {"repo_path": ".", "revision": "HEAD~1"}, Effect.ALLOW, "allowed"),
    ("git_show", {"repo_path": ".", "revision": "HEAD:src/app.py"}, Effect.ALLOW, "allowed"),
    ("git_branch", {"repo_path": ".", "branch_type": "all"}, Effect.ALLOW, "allowed"),
    ("git_commit", {"repo_path": ".", "message": "fix"}, Effect.ASK, "gated"),
    ("git_add", {"repo_path": ".", "files": ["src/app.py"]}, Effect.ASK, "gated"),
    ("git_add", {"repo_path": ".", "files": ["."]}, Effect.ASK, "gated"),
    ("git_add", {"repo_path": "src", "files": ["../README.md"]}, Effect.ASK, "gated"),
    ("git_reset", {"repo_path": "."}, Effect.ASK, "gated"),
    ("git_create_branch", {"repo_path": ".", "branch_name": "x"}, Effect.ASK, "gated"),
    ("git_checkout", {"repo_path": ".", "branch_name": "x"}, Effect.ASK, "gated"),
    ("git_status", {"repo_path": "/tmp"}, Effect.DENY, "outside_workspace"),
    ("git_status", {"repo_path": ".."}, Effect.DENY, "outside_workspace"),
    ("git_log", {"repo_path": "src/../.."}, Effect.DENY, "outside_workspace"),
    ("git_log", {"repo_path": "link"}, Effect.DENY, "outside_workspace"),
    ("git_commit", {"repo_path": "/srv/other", "message": "x"}, Effect.DENY,
     "outside_workspace"),
    ("git_add", {"repo_path": "/srv/other", "files": ["a"]}, Effect.DENY, "outside_workspace"),
    # files resolve against repo_path: from src, ../.. is outside
    ("git_add", {"repo_path": "src", "files": ["../../x"]}, Effect.DENY, "outside_workspace"),
    ("git_add", {"repo_path": ".", "files": ["a", "/etc/passwd"]}, Effect.DENY,
     "outside_workspace"),
    ("git_push", {"repo_path": "."}, Effect.ASK, "unknown_tool"),
])
def test_git_verdicts(root: Path, tool: str, args: dict[str, Any], effect: Effect,
                      code: str) -> None:
    policy = _policy(root, "mcp-git")
    args = json.loads(json.dumps(args).replace("{root}", str(root)))
    verdict = _judge(policy, f"git__{tool}", args)
    assert (verdict.effect, verdict.code) == (effect, code), verdict.message


def test_git_writes_follow_the_review_mode_and_outside_is_denied(root: Path) -> None:
    policy = _policy(root, "mcp-git")
    commit = {"repo_path": ".", "message": "fix"}
    assert _judge(policy, "git__git_commit", commit, "full").effect is Effect.ALLOW
    assert _judge(policy, "git__git_commit", commit, "manual").effect is Effect.ASK
    assert _judge(policy, "git__git_commit", commit, None, "webhook").effect is Effect.BLOCKED
    verdict = _judge(policy, "git__git_status", {"repo_path": "/home"}, "full")
    assert verdict.effect is Effect.DENY
    assert verdict.message == "Access denied: '/home' is outside workspace 'workspace'"


@pytest.mark.parametrize(("tool", "args"), [
    ("git__git_add", {"repo_path": ".", "files": [".env"]}),
    ("git__git_add", {"repo_path": "src", "files": ["a.py", "../.env"]}),
    ("git__git_show", {"repo_path": ".", "revision": "HEAD:.env"}),
    ("git__git_show", {"repo_path": ".", "revision": "main~2:config/.env.production"}),
])
def test_git_env_files_need_security(root: Path, tool: str, args: dict[str, Any]) -> None:
    policy = _policy(root, "mcp-git")
    verdict = _judge(policy, tool, args, "full")
    assert (verdict.effect, verdict.code) == (Effect.ASK, "mandatory_ask"), args
    assert verdict.roles == ("security",) and verdict.approvals == 2
    assert verdict.risk is Risk.CRITICAL


@pytest.mark.parametrize("revision", [
    "HEAD:.ssh/id_rsa", "main:deploy/server.key", ":.npmrc", ":0:.git-credentials",
    "v1.0:config/id_ed25519",
])
def test_git_show_of_another_secret_is_a_secret_read(root: Path, revision: str) -> None:
    """``objects = ["revision"]``: a file read out of a commit is judged as reading it."""
    for tool, name in (("git__git_show", "revision"), ("git__git_diff", "target")):
        verdict = _judge(_policy(root, "mcp-git"), tool, {"repo_path": ".", name: revision},
                         "full")
        assert (verdict.effect, verdict.code) == (Effect.ASK, "secret_read"), verdict.message
        assert verdict.mandatory


def test_objects_must_name_arguments() -> None:
    with pytest.raises(PolicyError, match="objects"):
        Policy.from_toml('[policy]\nversion = "1"\n[tools.show]\nobjects = "revision"\n')


# ---- signoff init / check ----------------------------------------------------------------

@pytest.mark.parametrize(("preset", "checks"), [
    ("mcp-filesystem", [
        ("fs__read_text_file", {"path": "README.md"}, None, "allow"),
        ("fs__read_text_file", {"path": "../x"}, None, "deny"),
        ("fs__read_text_file", {"path": "/etc/passwd"}, "full", "deny"),
        ("fs__read_multiple_files", {"paths": ["README.md", "/etc/hosts"]}, None, "deny"),
        ("fs__write_file", {"path": "a.md", "content": "x"}, None, "ask"),
        ("fs__write_file", {"path": "a.md", "content": "x"}, "full", "allow"),
        ("fs__edit_file", {"path": "a.md", "edits": []}, None, "ask"),
        ("fs__move_file", {"source": "a.md", "destination": "/tmp/a.md"}, "full", "deny"),
        ("fs__read_text_file", {"path": ".env"}, "full", "ask"),
    ]),
    ("mcp-git", [
        ("git__git_status", {"repo_path": "."}, None, "allow"),
        ("git__git_log", {"repo_path": "{root}"}, None, "allow"),
        ("git__git_commit", {"repo_path": ".", "message": "m"}, None, "ask"),
        ("git__git_commit", {"repo_path": ".", "message": "m"}, "full", "allow"),
        ("git__git_status", {"repo_path": "/"}, "full", "deny"),
        ("git__git_add", {"repo_path": ".", "files": [".env"]}, "full", "ask"),
    ]),
])
def test_init_and_check(tmp_path: Path, root: Path, preset: str,
                        checks: list[tuple[str, dict[str, Any], str | None, str]],
                        capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / f"{preset}.toml"
    assert main(["init", str(target), "--root", str(root), "--preset", preset,
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["preset"] == preset
    text = target.read_text("utf-8")
    example = PRESETS[preset].example
    assert f"signoff check --policy signoff.toml {example}" in text
    for tool, args, mode, expected in checks:
        argv = ["check", "--policy", str(target), "--tool", tool, "--args",
                json.dumps(args).replace("{root}", str(root)), "--json"]
        assert main([*argv, *(["--mode", mode] if mode else [])]) == 0
        verdict = json.loads(capsys.readouterr().out)
        assert verdict["effect"] == expected, (tool, args, mode, verdict["message"])
    # the header's example is a call this policy allows
    assert main(["check", "--policy", str(target), *shlex.split(example), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["effect"] == "allow"
