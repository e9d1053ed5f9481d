"""A local stand-in for Anthropic's Messages API that replays a scripted conversation.

The real Claude Code CLI talks to it through ``ANTHROPIC_BASE_URL``. The script is a
list of tool calls: while the conversation (the ``messages`` of a request that offers
the tools) holds fewer ``tool_result`` blocks than the script has calls, the next call
is answered as a streamed ``tool_use`` turn; after the last result, an ``end_turn``
text. Side requests the CLI makes on its own (a title, a quota probe: anything that
offers no tools) get a short text. Every request is logged, and the server is also
the CLI's HTTP(S) proxy, so an attempt to reach anything but loopback is logged as a
``CONNECT`` (and refused) instead of leaving the machine.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from rigs import LoopbackServer, Recorder, Seen

MODEL = "claude-sonnet-4-5-20250929"
FINAL_TEXT = "Done."


@dataclass(frozen=True)
class ToolCall:
    """One scripted model turn: call ``name`` with ``input``."""

    name: str
    input: dict[str, Any]


class Script(Recorder):
    def __init__(self, calls: Sequence[ToolCall]) -> None:
        super().__init__()
        self.calls = calls

    def turns(self) -> list[Seen]:
        """The conversation's own requests (those that offer the scripted tools)."""
        return [s for s in self.seen if s.path.startswith("/v1/messages")
                and isinstance(s.body, dict) and _offers(s.body, self.calls)]



def _offers(body: dict[str, Any], calls: Sequence[ToolCall]) -> bool:
    """A conversation turn offers tools (side requests offer none). The scripted names
    need not be among them: the CLI defers some (MCP tools, WebFetch…) to ToolSearch."""
    return bool(calls) and bool(body.get("tools"))


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``tool_result`` block in a request's conversation, in order."""
    found: list[dict[str, Any]] = []
    for message in body.get("messages") or ():
        content = message.get("content")
        if isinstance(content, list):
            found += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return found


def reply(script: Script, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the next assistant turn."""
    if not _offers(body, script.calls):
        return [{"type": "text", "text": "ok"}]
    done = len(tool_results(body))
    if done >= len(script.calls):
        return [{"type": "text", "text": FINAL_TEXT}]
    call = script.calls[done]
    return [{"type": "tool_use", "id": f"toolu_{done:02d}{uuid.uuid4().hex[:20]}",
             "name": call.name, "input": call.input}]


def _usage() -> dict[str, int]:
    return {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}


def message(blocks: list[dict[str, Any]], model: str) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": model, "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": _usage()}


def events(blocks: list[dict[str, Any]], model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SSE events of one streamed message, as the Messages API sends them."""
    whole = message(blocks, model)
    yield "message_start", {"type": "message_start", "message": {
        **whole, "content": [], "stop_reason": None, "usage": {**_usage(), "output_tokens": 1}}}
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            text = json.dumps(block["input"])
            half = len(text) // 2
            deltas = [{"type": "input_json_delta", "partial_json": part}
                      for part in (text[:half], text[half:])]
        else:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": start}
        if index == 0:
            yield "ping", {"type": "ping"}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": 5}}
    yield "message_stop", {"type": "message_stop"}


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

        def do_CONNECT(self) -> None:
            """A proxy tunnel the CLI asked for (somewhere beyond loopback): logged, refused."""
            self._seen(None)
            self._json(403, {"error": "no network beyond loopback in tests"})

        def do_GET(self) -> None:
            self._seen(None)
            if self.path.startswith("/v1/models"):
                self._json(200, {"data": [{"type": "model", "id": MODEL,
                                           "display_name": "Scripted",
                                           "created_at": "2025-09-29T00:00:00Z"}],
                                 "has_more": False, "first_id": MODEL, "last_id": MODEL})
            else:
                self._json(404, {"type": "error",
                                 "error": {"type": "not_found_error", "message": self.path}})

        def do_HEAD(self) -> None:
            self._seen(None)
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            body = self._read()
            self._seen(body)
            path = self.path.split("?", 1)[0]
            if path == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": 10})
                return
            if path != "/v1/messages" or not isinstance(body, dict):
                self._json(404, {"type": "error",
                                 "error": {"type": "not_found_error", "message": self.path}})
                return
            blocks = reply(script, body)
            model = str(body.get("model") or MODEL)
            if not body.get("stream"):
                self._json(200, message(blocks, model))
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for name, data in events(blocks, model):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
            self.close_connection = True

    return Handler


class MessagesServer(LoopbackServer):
    """The scripted server on 127.0.0.1 (an ephemeral port), in a thread."""

    def __init__(self, calls: Sequence[ToolCall]) -> None:
        self.script = Script(calls)
        super().__init__(_handler(self.script))
