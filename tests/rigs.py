"""What the rigs that run real coding-agent CLIs share: a CLI installed once from its
npm pin (``npm ci`` under a lock, skipped without npm, failed in CI), a scripted model
server on loopback in a thread, and a running ``signoff serve`` with a harness's
resident hooks installed against it."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import pytest


def pinned_cli(node: Path, binary: Path, ready: Callable[[], bool], package: str) -> Path:
    """``binary`` once ``npm ci`` in ``node`` (its package.json and lock pin ``package``)
    has made it ``ready``; skips saying why without Node.js or npm."""
    if ready():
        return binary
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip(f"Node.js and npm are needed for {package} (npm registry)")
    with (node / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready():
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                                  cwd=node, capture_output=True, text=True, timeout=900,
                                  check=False)
            if done.returncode != 0 or not ready():
                message = f"npm ci of {package} failed: {done.stderr[-2000:]}"
                if os.environ.get("CI"):
                    raise AssertionError(message)
                pytest.skip(message)
    return binary


@dataclass
class Seen:
    """One request a scripted server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Recorder:
    """Every request a scripted server received, and which of them tried to leave."""

    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, seen: Seen) -> None:
        with self.lock:
            self.seen.append(seen)

    def escapes(self) -> list[Seen]:
        """What the CLI tried to reach beyond this server (proxied requests)."""
        return [s for s in self.seen if s.method == "CONNECT" or s.path.startswith("http")]


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up (a CLI dropping a refused tunnel) is no error here."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LoopbackServer:
    """A scripted server on 127.0.0.1 (an ephemeral port), in a thread, for a ``with``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = _Quiet(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@contextlib.contextmanager
def resident_hooks(harness: str, *, db: Path, policy: Path, cwd: Path, env: dict[str, str],
                   settings: Path, install: Sequence[str] = ()) -> Iterator[str]:
    """``signoff serve`` on ``db`` and ``policy``, an agent user ``<harness>-bot``, and
    ``signoff hook install <harness> --url`` (with ``install``'s flags) writing its hooks
    into ``settings``: checked to hold one resident hook per event. Yields the server's
    URL; stops the server after."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "server"))
    from procs import start_server

    signoff = [sys.executable, "-m", "signoff.cli"]
    added = subprocess.run([*signoff, "users", "add", f"{harness}-bot", "--kind", "agent",
                            "--db", str(db), "--json"], capture_output=True, text=True,
                           timeout=120, check=True, env=env)
    token = cwd / f"{harness}-bot.token"
    token.write_text(json.loads(added.stdout)["token"], "utf-8")
    server = start_server(str(db), cwd, "--policy", str(policy),
                          env={"XDG_STATE_HOME": env["XDG_STATE_HOME"]})
    try:
        subprocess.run([*signoff, "hook", "install", harness, *install, "--url", server.url,
                        "--token-file", str(token), "--wait", "3"], capture_output=True,
                       text=True, timeout=120, check=True, env=env)
        hooks = json.loads(settings.read_text("utf-8"))["hooks"]
        commands = [h["command"] for entries in hooks.values() for e in entries
                    for h in e["hooks"]]
        assert len(commands) == 2 and all(" -S -I -c " in c and server.url in c
                                          for c in commands), commands
        yield server.url
    finally:
        server.stop()
