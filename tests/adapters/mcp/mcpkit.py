"""Helpers for the MCP proxy's tests: the proxy as a real process, the official client.

``Site`` is one test's world: a workspace, a policy file, a SQLite database, the
upstream's ledger and event files. ``proxied(site, upstream)`` starts ``signoff
mcp-proxy`` over stdio with the official ``mcp`` client on the other end.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from signoff import Gate, Policy, SqliteStore
from signoff.model import ApprovalRequest, RequestStatus

HERE = Path(__file__).parent
NODE = HERE / "node"
EXE = Path(sys.executable).with_name("signoff")
UPSTREAM = [sys.executable, str(HERE / "upstream.py")]

POLICY = """\
[policy]
unknown_tools = "allow"
default_expires = "{expires}"
[mcp]
server = "t"
[workspace]
root = "{root}"
outside = "deny"
name = "proxy-ws"
[tools.t__peek]
[tools.fs__read_text_file]
paths = ["path"]
[tools.fs__write_file]
paths = ["path"]
writes = true
content = "content"
{extra}
"""


@dataclass
class Site:
    root: Path  # the workspace
    dir: Path
    policy: Path
    db: Path
    ledger: Path
    events: Path
    url: str | None = None  # a postgresql:// database instead of the SQLite file ``db``

    def gate(self) -> Gate:
        if self.url is not None:
            from signoff import PostgresStore

            return Gate(Policy.load(self.policy), PostgresStore(self.url))
        return Gate(Policy.load(self.policy), SqliteStore(str(self.db)))

    def requests(self) -> list[ApprovalRequest]:
        gate = self.gate()
        try:
            return gate.store.list_requests(limit=1000)
        finally:
            gate.close()

    def ledger_lines(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    def event_lines(self) -> list[str]:
        return self.events.read_text().splitlines() if self.events.exists() else []

    def env(self) -> dict[str, str]:
        return {**os.environ, "UPSTREAM_LEDGER": str(self.ledger),
                "UPSTREAM_EVENTS": str(self.events)}


def make_site(tmp_path: Path, *, extra: str = "", expires: str = "1h") -> Site:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    policy = tmp_path / "signoff.toml"
    policy.write_text(POLICY.format(root=root, extra=extra, expires=expires), "utf-8")
    return Site(root=root, dir=tmp_path, policy=policy, db=tmp_path / "signoff.db",
                ledger=tmp_path / "ledger.txt", events=tmp_path / "events.txt")


def proxy_args(site: Site, *extra: str, wait: float = 20) -> list[str]:
    return ["mcp-proxy", "--policy", str(site.policy), "--db", site.url or str(site.db),
            "--wait", str(wait), "--inbox-url", "http://inbox.test", *extra]


def proxy_params(site: Site, upstream: Sequence[str], *extra: str,
                 wait: float = 20) -> StdioServerParameters:
    command = [] if "--upstream" in extra else ["--", *upstream]  # else a URL is the upstream
    return StdioServerParameters(command=str(EXE), args=[*proxy_args(site, *extra, wait=wait),
                                                         *command],
                                 env=site.env(), cwd=str(site.dir))


@contextlib.asynccontextmanager
async def proxied(site: Site, *extra: str, upstream: Sequence[str] = UPSTREAM,
                  wait: float = 20, via: str = "stdio", **client: Any) -> AsyncIterator[Client]:
    """The official client to ``signoff mcp-proxy -- upstream``: over stdio, or (``via=
    "http"``) to the proxy serving streamable HTTP (``--listen``)."""
    if via == "stdio":
        params = proxy_params(site, upstream, *extra, wait=wait)
        async with Client(stdio_client(params), **client) as session:
            yield session
        return
    assert via == "http", via
    port = free_port()
    command = [] if "--upstream" in extra else ["--", *upstream]
    args = [str(EXE), *proxy_args(site, *extra, wait=wait), "--listen", f"127.0.0.1:{port}",
            *command]
    with process(args, cwd=site.dir, env=site.env()) as proc:
        await anyio.to_thread.run_sync(wait_http, f"http://127.0.0.1:{port}/healthz", proc)
        async with Client(f"http://127.0.0.1:{port}/mcp", **client) as session:
            yield session


@contextlib.asynccontextmanager
async def direct(site: Site, *, upstream: Sequence[str] = UPSTREAM, **client: Any
                 ) -> AsyncIterator[Client]:
    """The same client straight to the upstream server (the baseline)."""
    params = StdioServerParameters(command=upstream[0], args=list(upstream[1:]),
                                   env=site.env(), cwd=str(site.dir))
    async with Client(stdio_client(params), **client) as session:
        yield session


def wait_for(predicate: Any, timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def pending(site: Site) -> list[ApprovalRequest]:
    return [r for r in site.requests() if r.status is RequestStatus.PENDING]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[Any], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError(f"{url} did not come up")


@contextlib.contextmanager
def process(args: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None,
            ) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(list(args), cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


# ---- the official servers from npm -------------------------------------------------------------


def npm_servers() -> Path:
    """``node_modules/.bin`` with the pinned official servers, installed once (``npm ci``)
    under a lock. Without npm the tests that need them skip, saying so; in CI a failed
    install fails."""
    bins = NODE / "node_modules" / ".bin"
    wanted = ("mcp-server-filesystem", "mcp-server-everything")
    if all((bins / name).exists() for name in wanted):
        return bins
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("Node.js and npm are needed for the official MCP servers (npm registry)")
    with (NODE / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((bins / name).exists() for name in wanted):
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                                  cwd=NODE, capture_output=True, text=True, timeout=600,
                                  check=False)
            if done.returncode != 0:
                message = f"npm ci failed: {done.stderr[-2000:]}"
                if os.environ.get("CI"):
                    raise AssertionError(message)
                pytest.skip(message)
    return bins


def dump(result: Any) -> Any:
    """A result as JSON-able data, for comparing proxied with direct."""
    return json.loads(result.model_dump_json(by_alias=True, exclude_none=True))


# ---- what the tests read in results ------------------------------------------------------------


def run(main: Any) -> Any:
    return anyio.run(main)


def answering(action: str = "accept") -> Any:
    """An elicitation callback that answers ``action`` and remembers the questions."""
    from mcp import types

    seen: list[str] = []

    async def callback(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        return types.ElicitResult(action=action,  # type: ignore[arg-type]
                                  content={} if action == "accept" else None)

    callback.seen = seen  # type: ignore[attr-defined]
    return callback


def text(result: Any) -> str:
    from mcp import types

    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def signoff_meta(result: Any) -> dict[str, Any]:
    return dict((result.meta or {}).get("signoff") or {})
