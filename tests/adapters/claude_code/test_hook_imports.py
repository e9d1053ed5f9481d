"""What ``signoff hook claude-code`` imports to judge one call: Claude Code starts it as a
new process for every tool call, so its start is mostly imports. A Read loads no shell
analyser, no command models, no cryptography, no notifier, HTTP client or demo; a Bash
call loads the analyser, and still no cryptography. Run as Claude Code runs it (``python
-m signoff.cli``), in a fresh interpreter that then names every module it holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from signoff.cli import main

# The real command line, run as ``python -m signoff.cli`` would, then the modules it held.
_PROBE = """
import json, runpy, sys
sys.argv = ["signoff", *sys.argv[1:]]
try:
    runpy.run_module("signoff.cli", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

# Never needed to judge a call that runs no shell command.
NOT_FOR_A_READ = (
    "signoff.shell.analysis", "signoff.shell.words", "signoff.shell.concerns",
    "signoff.shell.dangers", "signoff.shell.commands.git", "signoff.shell.commands.runners",
    "signoff.shell.commands.grammar", "tree_sitter", "tree_sitter_bash", "pathspec", "regex",
)
# Never needed to judge any call in process (no key is configured, nothing is sent).
NEVER = (
    "cryptography", "signoff.notify", "signoff.demo", "signoff.server", "signoff.remote",
    "signoff.review.chat_completions", "signoff.review.prompt", "urllib.request",
    "http.client", "signoff.cli.kernel", "signoff.cli.webhooks", "signoff.cli.trust",
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hook-imports")
    (root / "ws").mkdir()
    (root / "ws" / "notes.txt").write_text("milk\n", "utf-8")
    assert main(["init", str(root / "signoff.toml"), "--root", str(root / "ws"),
                 "--preset", "claude-code"]) == 0
    assert main(["db", "migrate", "--db", str(root / "signoff.db")]) == 0
    return root


def _hook(root: Path, tool: str, args: dict[str, object]) -> tuple[str, set[str]]:
    """The hook's decision on one PreToolUse event, and the modules its process loaded."""
    event = {"session_id": "s-imports", "cwd": str(root / "ws"),
             "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": args,
             "tool_use_id": f"toolu-{tool}"}
    env = {**os.environ, "XDG_STATE_HOME": str(root / "state")}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "hook", "claude-code", "--db", str(root / "signoff.db"),
         "--policy", str(root / "signoff.toml")],
        input=json.dumps(event), capture_output=True, text=True, timeout=60, check=False,
        env=env)
    _, marker, tail = done.stderr.rpartition("\nMODULES ")
    assert marker, done.stderr
    found = json.loads(tail)
    assert found["code"] in (0, None), done.stderr
    decision = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"]
    return str(decision), set(found["modules"])


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules for name in names if m == name or m.startswith(name + "."))


def test_a_read_loads_no_shell_analyser_and_nothing_it_does_not_use(project: Path) -> None:
    decision, modules = _hook(project, "Read", {"file_path": str(project / "ws" / "notes.txt")})
    assert decision == "allow"
    assert _loaded(modules, NOT_FOR_A_READ) == []
    assert _loaded(modules, NEVER) == []
    assert "signoff.kernel.gate" in modules  # it did judge the call through the gate


def test_a_shell_command_loads_the_analyser_and_still_no_cryptography(project: Path) -> None:
    decision, modules = _hook(project, "Bash", {"command": "ls -la"})
    assert decision == "allow"
    assert {"signoff.shell.analysis", "signoff.shell.commands.runners", "tree_sitter"} <= modules
    assert _loaded(modules, NEVER) == []
