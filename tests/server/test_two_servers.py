"""Two ``signoff serve`` processes on one PostgreSQL behave as one service: a decision
taken on server A wakes the agent long-polling server B, and B's SSE stream shows it
(LISTEN/NOTIFY). Real processes, a real database of their own.

How soon is a speed figure, measured by ``bench/http_bench.py`` ("decision → wake, other
server"; milliseconds here): this test runs beside the slow suite's browsers and package
builds, where one loaded second is no verdict on the code, so it asserts only that the
wake came from the decision, long before the long-poll's own end."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import procs
import pytest


@pytest.fixture
def database(tmp_path: Path) -> Iterator[str]:
    with procs.database("postgres", tmp_path) as url:
        yield url


def signoff(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return procs.signoff(*args, cwd=cwd)


@contextlib.contextmanager
def server(dsn: str, cwd: Path,
           *extra: str) -> Iterator[tuple[str, str | None, subprocess.Popen[str]]]:
    exe = Path(sys.executable).with_name("signoff")
    proc = subprocess.Popen([str(exe), "serve", "--db", dsn, "--port", "0", *extra], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        while first.startswith(procs.WARNING):  # the policy in the workspace (stderr, merged)
            first = proc.stdout.readline()
        url = re.search(r"server at (http://\S+)", first)
        assert url, first
        token = None
        line = proc.stdout.readline()
        if line.startswith("first start"):
            token = proc.stdout.readline().strip().split("code=", 1)[1]  # a login link
        deadline = time.monotonic() + 10
        while True:
            try:
                if httpx.get(url.group(1) + "/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not come up"
            time.sleep(0.05)
        yield url.group(1), token, proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.slow
def test_a_decision_on_one_server_wakes_a_waiter_on_the_other(database: str,
                                                               tmp_path: Path) -> None:
    signoff("db", "migrate", "--db", database, cwd=tmp_path)
    signoff("init", "signoff.toml", "--root", str(tmp_path), cwd=tmp_path)
    with server(database, tmp_path) as (url_a, link, _), \
            server(database, tmp_path) as (url_b, again, _):
        assert link is not None, "the first server creates the admin"
        assert again is None, "the second sees the same users: no second admin"
        # The first start prints a login link, never the admin's token: rotate issues one.
        admin = json.loads(signoff("users", "rotate", "admin", "--db", database, "--json",
                                   cwd=tmp_path).stdout)["token"]
        agent = json.loads(signoff("users", "add", "bot", "--kind", "agent", "--db", database,
                                   "--json", cwd=tmp_path).stdout)["token"]
        on_b = httpx.Client(base_url=url_b, headers={"Authorization": f"Bearer {agent}"},
                            timeout=30)
        answer = on_b.post("/api/v1/calls", json={
            "tool": "execute", "args": {"command": "make build"}, "call_id": "c1",
            "context": {"thread_id": "t1"}}).json()
        assert answer["status"] == "pending"
        request_id = answer["request_id"]

        sse_lines: list[str] = []
        sse_ready = threading.Event()

        def watch_b() -> None:  # the event stream is an approver's (agents: their calls)
            with httpx.Client(base_url=url_b, timeout=30,
                              headers={"Authorization": f"Bearer {admin}"}) as http, \
                    http.stream("GET", "/api/v1/events") as stream:
                for line in stream.iter_lines():
                    sse_ready.set()
                    sse_lines.append(line)
                    if "request.approved" in line:
                        return

        watcher = threading.Thread(target=watch_b, daemon=True)
        watcher.start()
        assert sse_ready.wait(10)

        decided: list[float] = []

        def approve_on_a() -> None:
            time.sleep(0.5)
            with httpx.Client(base_url=url_a, timeout=30,
                              headers={"Authorization": f"Bearer {admin}"}) as http:
                response = http.post(f"/api/v1/requests/{request_id}/decisions",
                                     json={"kind": "approve"})
                decided.append(time.monotonic())
                assert response.status_code == 200, response.text

        approver = threading.Thread(target=approve_on_a)
        approver.start()
        outcome = on_b.get(f"/api/v1/calls/{request_id}", params={"wait": 20}).json()
        woke = time.monotonic()
        approver.join()
        watcher.join(10)
        on_b.close()
    assert outcome["kind"] == "approved"
    print(f"waiter on B woke {1000 * (woke - decided[0]):.1f} ms after A answered")
    # The long-poll asked for 20 s: an answer this much sooner is the decision's.
    assert woke - decided[0] < 10.0, f"waiter on B woke {woke - decided[0]:.3f}s after A decided"
    assert any(request_id in line and "request.approved" in line for line in sse_lines)


@pytest.mark.slow
def test_each_server_verifies_the_others_receipts_from_either_jwks(database: str,
                                                                    tmp_path: Path) -> None:
    """Two servers on one PostgreSQL, each with a key of its own: a receipt signed by
    either verifies with the JWKS either serves (``signoff receipts verify --keys URL``)."""
    signoff("db", "migrate", "--db", database, cwd=tmp_path)
    signoff("init", "signoff.toml", "--root", str(tmp_path / "ws"), "--create-root",
            cwd=tmp_path)
    keys_dir = tmp_path.parent / f"{tmp_path.name}-keys"  # outside the workspace
    issuer = ("--issuer", "https://signoff.test")
    with server(database, tmp_path, "--signing-key", str(keys_dir / "a.pem"), *issuer) \
            as (url_a, _, _), \
            server(database, tmp_path, "--signing-key", str(keys_dir / "b.pem"), *issuer) \
            as (url_b, _, _):
        admin = json.loads(signoff("users", "rotate", "admin", "--db", database, "--json",
                                   cwd=tmp_path).stdout)["token"]
        agent = json.loads(signoff("users", "add", "bot", "--kind", "agent", "--db", database,
                                   "--json", cwd=tmp_path).stdout)["token"]
        receipts: dict[str, str] = {}
        for name, url in (("a", url_a), ("b", url_b)):
            with httpx.Client(base_url=url, timeout=30,
                              headers={"Authorization": f"Bearer {agent}"}) as bot, \
                    httpx.Client(base_url=url, timeout=30,
                                 headers={"Authorization": f"Bearer {admin}"}) as boss:
                rid = bot.post("/api/v1/calls", json={
                    "tool": "execute", "args": {"command": "make build"},
                    "call_id": f"c-{name}", "context": {"thread_id": f"t-{name}"}}
                ).json()["request_id"]
                assert boss.post(f"/api/v1/requests/{rid}/decisions",
                                 json={"kind": "approve"}).status_code == 200
                answer = bot.get(f"/api/v1/requests/{rid}/receipt").json()
                receipts[name] = answer["kid"]
                (tmp_path / f"{name}.json").write_text(json.dumps(answer))
        assert receipts["a"] != receipts["b"]  # two keys, one per server
        for name in ("a", "b"):
            for url in (url_a, url_b):
                checked = procs.signoff("receipts", "verify", str(tmp_path / f"{name}.json"),
                                        "--keys", f"{url}/.well-known/jwks.json",
                                        "--issuer", "https://signoff.test", "--json",
                                        cwd=tmp_path, check=False)
                assert checked.returncode == 0, checked.stdout + checked.stderr
                assert json.loads(checked.stdout)["kid"] == receipts[name]
