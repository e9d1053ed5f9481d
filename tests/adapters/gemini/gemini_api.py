"""A local stand-in for the Gemini API (``generateContent`` / ``streamGenerateContent``)
that replays a scripted conversation.

The real Gemini CLI reaches it through ``GOOGLE_GEMINI_BASE_URL``. The script is a list
of function calls: while a conversation turn (a request that offers
``functionDeclarations``) holds fewer ``functionResponse`` parts than the script has
calls, the next call is answered as a ``functionCall`` part; after the last response, a
final text. Only the current prompt's turn counts (the ``functionResponse`` parts after
the last user text): a resumed session replays the script afresh, whatever its history
holds. Side requests the CLI makes on its own (no tools offered: a next-speaker
check, a summary) get a short JSON-ish text. Streamed requests (``?alt=sse``) are
answered as Server-Sent Events. Every request is logged, and the server is also the
CLI's HTTP(S) proxy, so an attempt to reach anything but loopback is logged as a
``CONNECT`` (and refused) instead of leaving the machine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from rigs import LoopbackServer, Recorder, Seen

MODEL = "gemini-2.5-flash"
FINAL_TEXT = "Done."


@dataclass(frozen=True)
class FunctionCall:
    """One scripted model turn: call function ``name`` with ``args``."""

    name: str
    args: dict[str, Any]


class Script(Recorder):
    def __init__(self, calls: Sequence[FunctionCall]) -> None:
        super().__init__()
        self.calls = calls

    def turns(self) -> list[Seen]:
        """The conversation's own requests (those that offer the CLI's tools)."""
        return [s for s in self.seen if _method(s.path) in _GENERATE
                and isinstance(s.body, dict) and _offers(s.body)]


_GENERATE = ("generateContent", "streamGenerateContent")


def _method(path: str) -> str:
    """``streamGenerateContent`` of ``/v1beta/models/m:streamGenerateContent?alt=sse``."""
    return path.split("?", 1)[0].rpartition(":")[2]


def _offers(body: dict[str, Any]) -> bool:
    tools = body.get("tools") or (body.get("config") or {}).get("tools") or ()
    return any(isinstance(t, dict) and t.get("functionDeclarations") for t in tools)


def function_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``functionResponse`` part in a request's contents, in order."""
    found: list[dict[str, Any]] = []
    for content in body.get("contents") or ():
        for part in content.get("parts") or ():
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                found.append(part["functionResponse"])
    return found


def this_turn(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with only the contents since the last user prompt (a user text)."""
    contents = list(body.get("contents") or ())
    start = 0
    for index, content in enumerate(contents):
        parts = content.get("parts") or ()
        if content.get("role") == "user" and any("text" in p for p in parts) \
                and not any("functionResponse" in p for p in parts):
            start = index
    return {**body, "contents": contents[start:]}


def reply(script: Script, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of the next model turn."""
    if not _offers(body):
        return [{"text": json.dumps({"reasoning": "the scripted model is done",
                                     "next_speaker": "user"})}]
    done = len(function_responses(this_turn(body)))
    if done >= len(script.calls):
        return [{"text": FINAL_TEXT}]
    call = script.calls[done]
    return [{"functionCall": {"name": call.name, "args": call.args}}]


def response(parts: list[dict[str, Any]], model: str) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
            "modelVersion": model, "responseId": "rig"}


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _read(self) -> Any:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw) if raw else None
            except ValueError:
                return raw.decode("utf-8", "replace")

        def _seen(self, body: Any) -> None:
            script.record(Seen(self.command, self.path, dict(self.headers.items()), body))

        def _json(self, status: int, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _missing(self) -> None:
            self._json(404, {"error": {"code": 404, "message": self.path,
                                       "status": "NOT_FOUND"}})

        def do_CONNECT(self) -> None:
            """A proxy tunnel the CLI asked for (somewhere beyond loopback): logged, refused."""
            self._seen(None)
            self._json(403, {"error": "no network beyond loopback in tests"})

        def do_GET(self) -> None:
            self._seen(None)
            self._missing()

        def do_POST(self) -> None:
            body = self._read()
            self._seen(body)
            path, _, query = self.path.partition("?")
            method = _method(self.path)
            model = path.rsplit("/", 1)[-1].split(":")[0] or MODEL
            if method == "countTokens":
                self._json(200, {"totalTokens": 10})
                return
            if method not in _GENERATE or not isinstance(body, dict):
                self._missing()
                return
            whole = response(reply(script, body), model)
            if method == "generateContent":
                self._json(200, whole)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            if "alt=sse" in query:
                self.wfile.write(f"data: {json.dumps(whole)}\r\n\r\n".encode())
            else:  # a JSON array of chunks when not asked for SSE
                self.wfile.write(json.dumps([whole]).encode())
            self.wfile.flush()
            self.close_connection = True

    return Handler


class GeminiServer(LoopbackServer):
    """The scripted server on 127.0.0.1 (an ephemeral port), in a thread."""

    def __init__(self, calls: Sequence[FunctionCall]) -> None:
        self.script = Script(calls)
        super().__init__(_handler(self.script))
