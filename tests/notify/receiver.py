"""A real HTTP receiver on loopback that checks every webhook with the Standard Webhooks
library's own verifier, as a user's endpoint would.

``mode`` decides the answer: ``"ok"`` (204), ``"fail"`` (503), ``"hang"`` (holds the
request until released — a receiver slow enough to be caught mid-delivery), ``"noisy"``
(500 with a long body full of control characters). ``down()`` closes the port
(connection refused) and ``up()`` opens the same port again. ``bind`` is the loopback
address it listens on (``"::1"`` for IPv6); ``hosts`` records every POST's Host header.
``tls``: an ``ssl.SSLContext`` to serve HTTPS with; ``server_names`` records the TLS
server name (SNI) each connection asked for.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass(frozen=True)
class Arrival:
    webhook_id: str
    payload: dict[str, Any]
    at: float  # time.time() of arrival
    verified: bool


NOISE = "\x1b[31mERROR\x07\r\n\u202eevil\u200b" + "x" * 5000 + "\x00tail"


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class Receiver:
    def __init__(self, secret: str, bind: str = "127.0.0.1",
                 tls: ssl.SSLContext | None = None) -> None:
        self.secret = secret
        self.bind = bind
        self.tls = tls
        self.server_names: list[str | None] = []
        self.hosts: list[str] = []  # the Host header of every POST, answered or not
        self.mode = "ok"
        self.arrivals: list[Arrival] = []
        self.refused: list[str] = []  # why signatures failed
        self.release = threading.Event()
        self.hanging = threading.Event()  # set while a request is held
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.port = 0
        self.up()

    @property
    def url(self) -> str:
        host = f"[{self.bind}]" if ":" in self.bind else self.bind
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/hook"

    def up(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                receiver.hosts.append(self.headers.get("host") or "")
                mode = receiver.mode
                if mode == "hang":
                    receiver.hanging.set()
                    receiver.release.wait(60)
                if mode == "fail":
                    self.send_response(503)
                    self.end_headers()
                    return
                if mode == "noisy":
                    noise = NOISE.encode()
                    self.send_response(500)
                    self.send_header("content-length", str(len(noise)))
                    self.end_headers()
                    self.wfile.write(noise)
                    return
                headers = {k: v for k, v in self.headers.items()}
                try:
                    data = Webhook(receiver.secret).verify(body, headers)
                    verified = True
                except WebhookVerificationError as exc:
                    receiver.refused.append(str(exc))
                    data, verified = json.loads(body), False
                with receiver._lock:
                    receiver.arrivals.append(Arrival(self.headers["webhook-id"] or "", data,
                                                     time.time(), verified))
                self.send_response(204 if verified else 401)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        kind = _Server6 if ":" in self.bind else ThreadingHTTPServer
        server = kind((self.bind, self.port), Handler)
        if self.tls is not None:
            self.tls.sni_callback = lambda _sock, name, _ctx: self.server_names.append(name)
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def unique(self) -> dict[str, Arrival]:
        """Arrivals deduplicated by ``webhook-id`` (what a receiver does), first kept."""
        out: dict[str, Arrival] = {}
        for arrival in list(self.arrivals):
            out.setdefault(arrival.webhook_id, arrival)
        return out

    def types_of(self, request_id: str) -> list[str]:
        """The event types that arrived for a request, in arrival order, deduplicated."""
        return [a.payload["type"] for a in self.unique().values()
                if a.payload["data"]["request_id"] == request_id]

    def wait_for(self, count: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.unique()) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.unique())} of {count} webhooks arrived: "
                                     f"{[a.payload['type'] for a in self.arrivals]}")
            time.sleep(0.02)

    def close(self) -> None:
        self.release.set()
        self.down()
