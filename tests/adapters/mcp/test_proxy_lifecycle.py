"""``signoff mcp-proxy`` starts and stops like a well-behaved server (issue 43, item 1), as a
real process: SIGINT or SIGTERM ends it, over stdio or ``--listen``, with one goodbye line
and exit 0, a call waiting for a human answered first (its request still pending); a busy
``--listen`` port is one typed line, exit 2, with nothing announced.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcpkit import (
    EXE,
    UPSTREAM,
    Site,
    free_port,
    make_site,
    pending,
    proxy_args,
    wait_for,
    wait_http,
)

from signoff.model import RequestStatus

GOODBYE = "signoff mcp-proxy: stopped"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "lifecycle-test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
NOTE = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",  # asked: waits for a human
        "params": {"name": "note", "arguments": {"text": "before the stop"}}}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    made = make_site(tmp_path)
    subprocess.run([str(EXE), "db", "migrate", "--db", str(made.db)], cwd=tmp_path,
                   capture_output=True, check=True, timeout=60)
    return made


def start(site: Site, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(EXE), *proxy_args(site), *extra, "--", *UPSTREAM],
                            cwd=site.dir, env=site.env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen[str], sig: signal.Signals | None) -> tuple[int, str, str]:
    """Send ``sig`` (``None``: it was sent), then the exit code, stdout and stderr."""
    if sig is not None:
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


def stopped_answer(answer: dict[str, Any], site: Site, sig: signal.Signals) -> None:
    """The waiting call's answer names its request, still pending; nothing ran."""
    assert answer["id"] == 3, answer
    result = answer["result"]
    meta = result["_meta"]["signoff"]
    assert result["isError"] is True and meta["code"] == "proxy_stopped", result
    assert f"The proxy stopped ({sig.name}) before a human decided: request " \
           f"{meta['request_id']} is still waiting" in result["content"][0]["text"]
    [request] = site.requests()
    assert (request.id, request.status) == (meta["request_id"], RequestStatus.PENDING)
    assert site.ledger_lines() == []


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_call_waiting_for_a_human_is_answered_when_the_stdio_proxy_stops(
        site: Site, sig: signal.Signals) -> None:
    proc = start(site, "--no-elicit")
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    send(INITIALIZE)
    assert json.loads(proc.stdout.readline())["id"] == 1
    send(INITIALIZED)
    send(LIST)
    assert json.loads(proc.stdout.readline())["id"] == 2
    send(NOTE)
    wait_for(lambda: pending(site), what="the call's approval request")
    proc.send_signal(sig)
    stopped_answer(json.loads(proc.stdout.readline()), site, sig)
    code, _, err = stop(proc, None)
    assert "Traceback" not in err, err
    assert err.splitlines() == [f"{GOODBYE} ({sig.name})"], err
    assert code == 0


@pytest.mark.slow
def test_a_call_waiting_for_a_human_is_answered_when_the_listening_proxy_stops(
        site: Site) -> None:
    port = free_port()
    proc = start(site, "--no-elicit", "--listen", f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}/mcp"
    answers: list[Any] = []
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        headers = {"Accept": "application/json, text/event-stream"}
        opened = httpx.post(url, json=INITIALIZE, headers=headers, timeout=30)
        headers |= {"Mcp-Session-Id": opened.headers["mcp-session-id"],
                    "Mcp-Protocol-Version": "2025-06-18"}
        httpx.post(url, json=INITIALIZED, headers=headers, timeout=30)
        httpx.post(url, json=LIST, headers=headers, timeout=30)

        def call() -> None:
            try:
                answer = httpx.post(url, json=NOTE, headers=headers, timeout=60)
                answers.extend(json.loads(line[len("data:"):]) for line in
                               answer.text.splitlines() if line.startswith("data:"))
            except httpx.HTTPError as exc:
                answers.append(exc)

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        wait_for(lambda: pending(site), what="the call's approval request")
    except BaseException:
        proc.kill()
        proc.communicate(timeout=10)
        raise
    code, _, err = stop(proc, signal.SIGINT)
    caller.join(10)
    assert len(answers) == 1, answers  # an answer, not a reset or an empty stream
    stopped_answer(answers[0], site, signal.SIGINT)
    assert "Traceback" not in err, err
    assert err.splitlines()[-1] == f"{GOODBYE} (SIGINT)", err
    assert code == 0
