"""``signoff mcp-proxy --listen`` answers only its own names (DNS rebinding).

A real proxy process on 127.0.0.1; requests go to that address over a real socket,
only their ``Host``/``Origin`` headers name another host. The upstream command
records each start, so "refused before any session" is seen: nothing started.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcpkit import EXE, HERE, Site, free_port, make_site, process, proxy_args, wait_http

pytestmark = pytest.mark.slow

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "page", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
EVIL = "rebind.attacker.example"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return make_site(tmp_path)


@contextlib.contextmanager
def listening(site: Site, *extra: str) -> Iterator[tuple[int, Path]]:
    port = free_port()
    starts = site.dir / "upstream-starts.txt"
    upstream = ["sh", "-c", f'echo started >> "{starts}"; exec "$0" "$1"', sys.executable,
                str(HERE / "upstream.py")]
    args = [str(EXE), *proxy_args(site, *extra), "--listen", f"127.0.0.1:{port}", "--",
            *upstream]
    with process(args, cwd=site.dir, env=site.env()) as proc:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        yield port, starts


def post(port: int, host: str, origin: str | None = None, body: Any = INITIALIZE
         ) -> httpx.Response:
    headers = {**MCP_HEADERS, "Host": host}
    if origin is not None:
        headers["Origin"] = origin
    return httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers, timeout=10)


def sessions(port: int) -> int:
    return int(httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()["sessions"])


def test_a_rebinding_request_is_refused_before_any_session(site: Site) -> None:
    with listening(site) as (port, starts):
        refused = post(port, f"{EVIL}:{port}", origin=f"http://{EVIL}:{port}")
        assert refused.status_code == 421
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["code"] == "host_not_allowed"
        assert "mcp-session-id" not in refused.headers
        # The same name on a GET (a stream) or a DELETE: refused too.
        for method in ("GET", "DELETE"):
            answer = httpx.request(method, f"http://127.0.0.1:{port}/mcp", timeout=5,
                                   headers={**MCP_HEADERS, "Host": f"{EVIL}:{port}"})
            assert (answer.status_code, answer.json()["code"]) == (421, "host_not_allowed")
        # A page on another origin, sending to the right name: refused as well.
        foreign = post(port, f"127.0.0.1:{port}", origin=f"http://{EVIL}:{port}")
        assert (foreign.status_code, foreign.json()["code"]) == (403, "origin_not_allowed")
        assert sessions(port) == 0 and not starts.exists()  # no session, no upstream

        # The listener's own names work, with or without a matching Origin.
        for host, origin in ((f"127.0.0.1:{port}", None),
                             (f"localhost:{port}", f"http://localhost:{port}")):
            opened = post(port, host, origin=origin)
            assert opened.status_code == 200, opened.text
            assert opened.headers["mcp-session-id"]
        assert sessions(port) == 2
        assert starts.read_text().splitlines() == ["started", "started"]


def test_allow_host_adds_a_name(site: Site) -> None:
    with listening(site, "--allow-host", "mcp.internal.test",
                   "--allow-origin", "http://inspector.test:6274") as (port, _starts):
        assert post(port, f"mcp.internal.test:{port}").status_code == 200
        assert post(port, f"localhost:{port}",
                    origin="http://inspector.test:6274").status_code == 200
        still = post(port, f"{EVIL}:{port}")
        assert (still.status_code, still.json()["code"]) == (421, "host_not_allowed")


@pytest.mark.parametrize(("flag", "value", "code"), [
    ("--allow-host", "bad name!", "invalid_allow_host"),
    ("--allow-host", "x.test:99999", "invalid_allow_host"),
    ("--allow-origin", "x.test", "invalid_allow_origin"),
    ("--allow-origin", "http://x.test/path", "invalid_allow_origin"),
])
def test_a_bad_allowed_name_is_a_typed_error(site: Site, flag: str, value: str,
                                             code: str) -> None:
    import subprocess

    done = subprocess.run([str(EXE), *proxy_args(site, flag, value), "--listen",
                           f"127.0.0.1:{free_port()}", "--", sys.executable,
                           str(HERE / "upstream.py")], cwd=site.dir, env=site.env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert code in done.stderr


@pytest.mark.parametrize(("listen", "answered", "refused"), [
    ("127.0.0.1", ["127.0.0.1:8766", "localhost:8766", "[::1]:8766"],
     ["127.0.0.1", "localhost:8767", "rebind.attacker.example:8766", "127.0.0.1.nip.io:8766"]),
    ("::1", ["[::1]:8766", "localhost:8766"], ["::1:8766", "[::2]:8766"]),
    ("0.0.0.0", ["localhost:8766", "127.0.0.1:8766"], ["10.0.0.5:8766"]),
    ("10.1.2.3", ["10.1.2.3:8766", "localhost:8766"], ["127.0.0.1:8766"]),
])
def test_the_default_names(listen: str, answered: list[str], refused: list[str]) -> None:
    from signoff.adapters.mcp import HostGuard

    guard = HostGuard.for_listen(listen, 8766)
    for host in answered:
        assert guard.refusal([("host", host)]) is None, host
        assert guard.refusal([("host", host), ("origin", f"http://{host}")]) is None
    for host in refused:
        assert guard.refusal([("host", host)])[:2] == (421, "host_not_allowed"), host
    # A missing or repeated Host, a repeated Origin: refused.
    assert guard.refusal([])[1] == "host_not_allowed"
    good = answered[0]
    assert guard.refusal([("host", good), ("host", good)])[1] == "host_not_allowed"
    assert guard.refusal([("host", good), ("origin", f"http://{good}"),
                          ("origin", "http://evil.example")])[1] == "origin_not_allowed"
    assert guard.refusal([("host", good), ("origin", "null")])[1] == "origin_not_allowed"
