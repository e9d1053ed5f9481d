"""A local HTTP server standing in for Slack's Web API, for the real ``slack_sdk`` client
(``WebClient(base_url=...)``): it records each call (method, token, arguments) and answers
as Slack does — ``{"ok": true, ...}``, or ``{"ok": false, "error": ...}`` when told to.
Also: sign an interaction callback as Slack signs it, with ``slack_sdk``'s own signer."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode

from slack_sdk.signature import SignatureVerifier


@dataclass(frozen=True)
class Call:
    method: str
    token: str
    args: dict[str, Any]


class SlackApi:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.fail: dict[str, str] = {}  # method → the error to answer with
        self._ts = 0
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                method = self.path.rsplit("/", 1)[-1]
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                kind = self.headers.get("content-type", "")
                if "json" in kind:
                    args = json.loads(raw or b"{}")
                else:
                    args = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                token = self.headers.get("authorization", "").removeprefix("Bearer ")
                answer = api.answer(method, token, args)
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    def answer(self, method: str, token: str, args: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls.append(Call(method, token, args))
            if method in self.fail:
                return {"ok": False, "error": self.fail[method]}
            self._ts += 1
            ts = f"1700000000.{self._ts:06d}"
        if method == "chat.postMessage":
            return {"ok": True, "channel": args.get("channel"), "ts": ts,
                    "message": {"ts": ts}}
        if method == "chat.update":
            return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts")}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": ts}
        return {"ok": True}

    def of(self, method: str) -> list[Call]:
        return [c for c in list(self.calls) if c.method == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 20.0) -> list[Call]:
        deadline = time.monotonic() + timeout
        while len(self.of(method)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.of(method))} of {count} {method} calls: "
                                     f"{[c.method for c in self.calls]}")
            time.sleep(0.02)
        return self.of(method)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def signed(secret: str, payload: dict[str, Any], *, at: float | None = None
           ) -> tuple[bytes, dict[str, str]]:
    """An interaction callback as Slack posts it: ``payload=<json>``, form-encoded, with its
    timestamp and ``v0=`` signature headers."""
    body = urlencode({"payload": json.dumps(payload)})
    stamp = str(int(time.time() if at is None else at))
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    assert signature is not None
    return body.encode(), {"x-slack-request-timestamp": stamp, "x-slack-signature": signature,
                           "content-type": "application/x-www-form-urlencoded"}
