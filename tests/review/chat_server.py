"""A scripted server speaking OpenAI's chat-completions wire protocol, for tests and bench.

A threaded ``http.server`` on 127.0.0.1 (a free port) serving
``POST /v1/chat/completions``. Each request takes the next scripted ``Reply``
from a queue (or the ``default`` one when the queue is empty), waits its
``delay``, and answers with its status and body. Every request body is kept
(``requests``) and counted (``hits``), so a test can check what the client sent
— e.g. that no ``tools`` were offered — and how often it came::

    with ChatServer() as server:
        server.script(Reply.verdict("approve", "fits the intent"))
        reviewer = ChatCompletionsReviewer("m", base_url=server.base_url, api_key="k")
        ...
        assert server.hits == 1 and "tools" not in server.requests[0]

A plain module (``from chat_server import ChatServer, Reply``): bench/ puts
tests/review on ``sys.path`` and uses it too.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: an HTTP status, a JSON body (or raw bytes), after a delay."""

    status: int = 200
    body: Any = None  # a JSON value, or bytes sent as they are
    delay: float = 0.0  # seconds to wait before answering
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def content(cls, text: str | None, *, usage: bool = True, finish_reason: str = "stop",
                refusal: str | None = None, model: str = "scripted-model",
                delay: float = 0.0) -> Reply:
        """A 200 chat completion whose message content is ``text``."""
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if refusal is not None:
            message["refusal"] = refusal
        body: dict[str, Any] = {
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        }
        if usage:
            body["usage"] = {"prompt_tokens": 123, "completion_tokens": 17, "total_tokens": 140}
        return cls(body=body, delay=delay)

    @classmethod
    def verdict(cls, verdict: str, reason: str, **kwargs: Any) -> Reply:
        """A well-formed answer: ``{"verdict": ..., "reason": ...}``."""
        return cls.content(json.dumps({"verdict": verdict, "reason": reason}), **kwargs)

    @classmethod
    def error(cls, status: int, message: str = "scripted error", **kwargs: Any) -> Reply:
        """An error in the OpenAI shape, e.g. 429 or 500."""
        return cls(status=status, body={"error": {"message": message, "type": "scripted",
                                                  "code": None}}, **kwargs)


class ChatServer:
    """The server; a context manager that starts and stops it."""

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply.verdict("escalate", "no scripted answer left")
        self.requests: list[dict[str, Any]] = []  # every request body, parsed
        self.headers: list[dict[str, str]] = []  # every request's headers, names lowercased
        self.service_s: list[float] = []  # the server's own time per request, delays included
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True, name="chat-server")

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def hits(self) -> int:
        with self._lock:
            return len(self.requests)

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order; afterwards the default one."""
        with self._lock:
            self._queue.extend(replies)

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            return self._queue.popleft() if self._queue else self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle on, the client's delayed ACK
            # would add ~40 ms to every answer, a cost no real endpoint charges.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                start = time.perf_counter()
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(Reply.error(404, f"no route {self.path}"))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                reply = server._next(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.delay:
                    time.sleep(reply.delay)
                self._send(reply)
                server.service_s.append(time.perf_counter() - start)

            def _send(self, reply: Reply) -> None:
                payload = (reply.body if isinstance(reply.body, bytes)
                           else json.dumps(reply.body).encode())
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        return Handler
