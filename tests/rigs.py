"""What the rigs that run real coding-agent CLIs share: a CLI installed once from its
npm pin (``npm ci`` under a lock, skipped without npm, failed in CI), and a scripted model
server on loopback in a thread."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
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
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

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
