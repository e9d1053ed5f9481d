"""``signoff mcp-proxy`` starts and stops like a well-behaved server (issue 43, item 1), as a
real process: SIGINT or SIGTERM ends it, over stdio or ``--listen``, with one goodbye line
and exit 0; a busy ``--listen`` port is one typed line, exit 2, with nothing announced.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcpkit import EXE, UPSTREAM, Site, free_port, make_site, proxy_args, wait_http

GOODBYE = "signoff mcp-proxy: stopped"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "lifecycle-test", "version": "1"}}}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    made = make_site(tmp_path)
    subprocess.run([str(EXE), "db", "migrate", "--db", str(made.db)], cwd=tmp_path,
                   capture_output=True, check=True, timeout=60)
    return made


@pytest.fixture
def busy() -> Iterator[int]:
    """A port this test's own process holds, bound and listening."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


def start(site: Site, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(EXE), *proxy_args(site), *extra, "--", *UPSTREAM],
                            cwd=site.dir, env=site.env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen[str], sig: signal.Signals) -> tuple[int, str, str]:
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    return proc.returncode, out, err


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_stdio_proxy_cleanly(site: Site, sig: signal.Signals) -> None:
    proc = start(site)
    assert proc.stdin is not None and proc.stdout is not None
    # In session: the client's initialize is answered through the upstream.
    proc.stdin.write(json.dumps(INITIALIZE) + "\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert answer["id"] == 1 and "result" in answer, answer
    code, _, err = stop(proc, sig)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.splitlines() == [f"{GOODBYE} ({sig.name})"], err
    assert code == 0


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_listening_proxy_cleanly(site: Site, sig: signal.Signals) -> None:
    port = free_port()
    proc = start(site, "--listen", f"127.0.0.1:{port}")
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
    except BaseException:
        proc.kill()
        proc.communicate(timeout=10)
        raise
    code, out, err = stop(proc, sig)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.splitlines() == [f"signoff mcp-proxy: serving MCP at http://127.0.0.1:{port}/mcp",
                                f"{GOODBYE} ({sig.name})"], err
    assert out == ""
    assert code == 0


@pytest.mark.slow
def test_a_busy_listen_port_is_one_typed_line_and_nothing_announced(site: Site,
                                                                     busy: int) -> None:
    done = subprocess.run([str(EXE), *proxy_args(site), "--listen", f"127.0.0.1:{busy}",
                           "--", *UPSTREAM], cwd=site.dir, env=site.env(), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()  # no "serving MCP at …" first
    assert line.startswith("signoff: error [port_in_use]: "), line
    assert f"127.0.0.1:{busy} is already in use (by pid {os.getpid()} " in line, line
    assert "--listen HOST:N" in line


@pytest.mark.slow
def test_a_busy_listen_port_with_json_is_one_json_line(site: Site, busy: int) -> None:
    done = subprocess.run([str(EXE), *proxy_args(site), "--listen", f"127.0.0.1:{busy}",
                           "--json", "--", *UPSTREAM], cwd=site.dir, env=site.env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    [line] = done.stdout.splitlines()
    assert json.loads(line)["error"]["code"] == "port_in_use"


@pytest.mark.slow
def test_listen_on_port_0_announces_the_port_it_bound(site: Site) -> None:
    proc = start(site, "--listen", "127.0.0.1:0", "--json")
    try:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["url"]
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert port != 0 and url == f"http://127.0.0.1:{port}/mcp"
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
    finally:
        code, _, err = stop(proc, signal.SIGTERM)
    assert code == 0, err
