"""The rig for tests that run the real Gemini CLI (``gemini -p``, headless).

``gemini_bin()`` installs the pinned CLI from the npm registry once (``npm ci`` in
``node/``, under a lock). ``GeminiProject`` is one run's world: a temp project and a
fresh ``HOME`` whose ``~/.gemini/settings.json`` turns off usage statistics, telemetry
and update checks, and ``run()`` starts ``gemini -p … --output-format json`` against a
``GeminiServer`` (``GOOGLE_GEMINI_BASE_URL``), with every other HTTP(S) request sent
through that server as a proxy, which logs and refuses it.

Headless, the CLI leaves out of the model's tool list every tool that would need a
confirmation (``run_shell_command``, ``write_file``, ``replace``: "Tool not found"), so
the runs use ``--approval-mode yolo``: the CLI's own prompt is off and the BeforeTool
hook is the only gate. ``GEMINI_CLI_TRUST_WORKSPACE=true`` trusts the project for the
run: an untrusted folder refuses yolo (exit 55) and runs no project hooks, and
``--skip-trust`` comes too late for the latter (the project settings are already
dropped when it applies). ``GEMINI_SANDBOX=false``: no container sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemini_api import MODEL, GeminiServer

from rigs import pinned_cli

HERE = Path(__file__).parent
NODE = HERE / "node"
DATA = HERE / "data"
RECORD_HOOK = HERE / "record_hook.py"
PACKAGE = "@google/gemini-cli"
VERSION = json.loads((NODE / "package.json").read_text())["dependencies"][PACKAGE]
HEADLESS = ("--output-format", "json", "-m", MODEL, "--approval-mode", "yolo")
#: The user settings that keep the CLI quiet: no usage statistics, telemetry or updates.
QUIET_SETTINGS: dict[str, Any] = {
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
}


def gemini_bin() -> Path:
    """The pinned ``gemini`` launcher, installed once with ``npm ci``; skips without npm."""
    binary = NODE / "node_modules" / ".bin" / "gemini"
    bundle = NODE / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    return pinned_cli(NODE, binary, lambda: binary.exists() and bundle.exists(), PACKAGE)


def quiet_env(base_url: str) -> dict[str, str]:
    """The model API is the local server; any other HTTP(S) goes through it as a proxy."""
    return {
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_API_KEY": "rig-key",
        "GEMINI_SANDBOX": "false",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_TELEMETRY_ENABLED": "false",
        "HTTPS_PROXY": base_url,
        "HTTP_PROXY": base_url,
        "https_proxy": base_url,
        "http_proxy": base_url,
        "NO_PROXY": "127.0.0.1,localhost,::1",
        "no_proxy": "127.0.0.1,localhost,::1",
    }


def hook_entry(command: str, matcher: str = "*", timeout_ms: int | None = None
               ) -> dict[str, Any]:
    """One entry of a settings file's ``hooks.<Event>`` list (timeouts in milliseconds)."""
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout_ms is not None:
        hook["timeout"] = timeout_ms
    return {"matcher": matcher, "hooks": [hook]}


@dataclass
class GeminiRun:
    """What one CLI run left: its exit code, its JSON result and stderr."""

    returncode: int
    result: dict[str, Any]
    stdout: str
    stderr: str


@dataclass
class GeminiProject:
    """A temp project the CLI runs in, with a home of its own."""

    root: Path

    def __post_init__(self) -> None:
        self.dir = self.root / "project"
        self.home = self.root / "home"
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.home / ".gemini").mkdir(parents=True, exist_ok=True)
        self.user_settings(QUIET_SETTINGS)

    def user_settings(self, data: dict[str, Any]) -> None:
        """Write ``~/.gemini/settings.json`` (the quiet settings, with ``data`` over them)."""
        (self.home / ".gemini" / "settings.json").write_text(
            json.dumps({**QUIET_SETTINGS, **data}, indent=2))

    def run(self, server: GeminiServer, prompt: str, *args: str,
            env: dict[str, str] | None = None, timeout: float = 120) -> GeminiRun:
        """``gemini -p prompt`` headless (``HEADLESS``) in the project, ``*args`` after."""
        full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                "LANG": "C.UTF-8", **quiet_env(server.url), **(env or {})}
        done = subprocess.run(
            [str(gemini_bin()), "-p", prompt, *HEADLESS, *args],
            cwd=self.dir, env=full, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=timeout, check=False)
        try:
            result = json.loads(done.stdout)
        except ValueError:
            result = {}
        return GeminiRun(done.returncode, result, done.stdout, done.stderr)


def python_command(script: Path) -> str:
    """A hook command line that runs ``script`` with this interpreter."""
    return f"{sys.executable} {script}"
