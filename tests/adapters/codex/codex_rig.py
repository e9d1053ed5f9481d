"""The rig for tests that run the real Codex CLI (``codex exec``).

``codex_bin()`` installs the pinned CLI from the npm registry once (``npm ci`` in
``node/``, under a lock). ``CodexProject`` is one run's world: a temp project and a
fresh ``CODEX_HOME`` whose ``hooks.json`` holds the hooks, and ``run()`` starts
``codex exec --json`` against a ``ResponsesServer`` (a ``model_providers`` entry with
``wire_api = "responses"``), with everything else kept on loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from responses_api import ResponsesServer

from rigs import pinned_cli

HERE = Path(__file__).parent
NODE = HERE / "node"
DATA = HERE / "data"
RECORD_HOOK = HERE.parent / "claude_code" / "record_hook.py"
PACKAGE = "@openai/codex"
VERSION = json.loads((NODE / "package.json").read_text())["dependencies"][PACKAGE]

#: What keeps ``codex exec`` off the network beyond the model provider: no update
#: check, no analytics, no plugin/app catalogues (without these it reaches github.com,
#: api.github.com and chatgpt.com). The workspace-write sandbox lets a command write in
#: the project; ``--dangerously-bypass-hook-trust`` runs hooks nobody reviewed in the TUI
#: (without it, or a persisted trust, a new hooks.json is silently not run).
QUIET = ("-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false",
         "--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps")


def codex_bin() -> Path:
    """The pinned ``codex`` launcher, installed once with ``npm ci``; skips without npm."""
    binary = NODE / "node_modules" / ".bin" / "codex"
    native = NODE / "node_modules" / "@openai" / "codex-linux-x64"
    return pinned_cli(NODE, binary, lambda: binary.exists() and native.exists(), PACKAGE)


@dataclass
class CodexRun:
    returncode: int
    events: list[dict[str, Any]]
    stdout: str
    stderr: str


@dataclass
class CodexProject:
    root: Path

    def __post_init__(self) -> None:
        self.dir = self.root / "project"
        self.home = self.root / "home"
        self.codex_home = self.home / ".codex"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.codex_home.mkdir(parents=True, exist_ok=True)

    def hooks(self, data: dict[str, Any]) -> None:
        """Write the user-level ``$CODEX_HOME/hooks.json``."""
        (self.codex_home / "hooks.json").write_text(json.dumps(data, indent=2))

    def run(self, server: ResponsesServer, prompt: str, *args: str,
            env: dict[str, str] | None = None, timeout: float = 120,
            model: str = "gpt-rig", persist: bool = False,
            resume: str | None = None) -> CodexRun:
        """``codex exec --json … prompt`` in the project: ``--ephemeral`` unless
        ``persist`` (a session kept for ``resume``); ``resume`` continues that session
        (``codex exec … resume <id> prompt``)."""
        full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                "CODEX_HOME": str(self.codex_home), "LANG": "C.UTF-8",
                "RIG_API_KEY": "sk-rig", "HTTPS_PROXY": server.url, "HTTP_PROXY": server.url,
                "https_proxy": server.url, "http_proxy": server.url,
                "NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1",
                **(env or {})}
        provider = (f'model_providers.rig={{name="rig", base_url="{server.url}/v1", '
                    'wire_api="responses", env_key="RIG_API_KEY"}')
        keep = () if persist or resume else ("--ephemeral",)
        tail = ("resume", resume, prompt) if resume else (prompt,)
        done = subprocess.run(
            [str(codex_bin()), "exec", "--json", "--skip-git-repo-check", *keep,
             "-s", "workspace-write", "-c", 'model_provider="rig"', "-c", provider,
             "-m", model, *QUIET, *args, *tail],
            cwd=self.dir, env=full, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=timeout, check=False)
        events = [json.loads(line) for line in done.stdout.splitlines()
                  if line.startswith("{")]
        return CodexRun(done.returncode, events, done.stdout, done.stderr)
