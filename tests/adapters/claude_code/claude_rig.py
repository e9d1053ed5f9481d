"""The rig for tests that run the real Claude Code CLI.

``claude_bin()`` installs the pinned CLI from the npm registry once (``npm ci`` in
``node/``, under a lock, as the MCP tests install their servers). ``Project`` is one
run's world: a temp project with ``.claude/settings.json``, a fresh ``HOME`` (so no
user settings, credentials or history leak in or out), and ``run()`` starts
``claude -p … --output-format json`` against a ``MessagesServer`` with every network
setting pointed at loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from messages_api import MessagesServer

from rigs import pinned_cli

HERE = Path(__file__).parent
NODE = HERE / "node"
DATA = HERE / "data"
RECORD_HOOK = HERE / "record_hook.py"
PACKAGE = "@anthropic-ai/claude-code"
VERSION = json.loads((NODE / "package.json").read_text())["dependencies"][PACKAGE]


def claude_bin() -> Path:
    """The pinned ``claude`` executable, installed once with ``npm ci``. Without npm (or
    the registry) the tests skip, saying so; in CI a failed install fails."""
    binary = NODE / "node_modules" / ".bin" / "claude"

    def ready() -> bool:
        # The npm package's bin is a placeholder until its postinstall copies the
        # native binary for this platform over it (hundreds of MB, not a stub).
        return binary.exists() and binary.resolve().stat().st_size > 1_000_000

    return pinned_cli(NODE, binary, ready, PACKAGE)


def quiet_env(base_url: str) -> dict[str, str]:
    """The environment that keeps the CLI on loopback: the model API is the local
    server, telemetry, error reporting, auto-update and other nonessential traffic are
    off, and any other HTTP(S) the CLI attempts goes through the local server as its
    proxy, which logs and refuses it (so a test can assert nothing tried to leave)."""
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-rig",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "HTTPS_PROXY": base_url,
        "HTTP_PROXY": base_url,
        "https_proxy": base_url,
        "http_proxy": base_url,
        "NO_PROXY": "127.0.0.1,localhost,::1",
        "no_proxy": "127.0.0.1,localhost,::1",
    }


def hook_entry(command: str, matcher: str = "*", timeout: int | None = None) -> dict[str, Any]:
    """One entry of a settings file's ``hooks.<Event>`` list."""
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    return {"matcher": matcher, "hooks": [hook]}


@dataclass
class Run:
    """What one CLI run left: its exit code, its JSON result and stderr."""

    returncode: int
    result: dict[str, Any]
    stdout: str
    stderr: str


@dataclass
class Project:
    """A temp project the CLI runs in, with a home of its own."""

    root: Path

    def __post_init__(self) -> None:
        self.dir = self.root / "project"
        self.home = self.root / "home"
        (self.dir / ".claude").mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)

    def settings(self, data: dict[str, Any]) -> None:
        """Write the project's ``.claude/settings.json``."""
        (self.dir / ".claude" / "settings.json").write_text(json.dumps(data, indent=2))

    def run(self, server: MessagesServer, prompt: str, *args: str,
            env: dict[str, str] | None = None, timeout: float = 120) -> Run:
        """``claude -p prompt --output-format json *args`` in the project."""
        full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                "LANG": "C.UTF-8", **quiet_env(server.url), **(env or {})}
        done = subprocess.run(
            [str(claude_bin()), "-p", prompt, "--output-format", "json", *args],
            cwd=self.dir, env=full, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=timeout, check=False)
        try:
            result = json.loads(done.stdout)
        except ValueError:
            result = {}
        return Run(done.returncode, result, done.stdout, done.stderr)


def python_command(script: Path) -> str:
    """A hook command line that runs ``script`` with this interpreter."""
    return f"{sys.executable} {script}"
