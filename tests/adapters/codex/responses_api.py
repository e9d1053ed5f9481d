"""A local stand-in for OpenAI's Responses API that replays a scripted conversation.

The real Codex CLI reaches it through a ``model_providers`` entry whose ``base_url`` is
this server (``wire_api = "responses"``). While the request's ``input`` holds fewer
``function_call_output`` items than the script has calls, the next call is streamed
as a ``function_call`` item; then a final assistant message. Every request is logged;
as the CLI's HTTP(S) proxy the server also logs (and refuses) anything bound elsewhere.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from rigs import LoopbackServer, Recorder, Seen

FINAL_TEXT = "Done."


@dataclass(frozen=True)
class FunctionCall:
    """One scripted model turn: call function ``name`` with ``arguments`` (or with what
    ``arguments`` makes of the request's body: a call that uses an earlier output)."""

    name: str
    arguments: dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class CustomCall:
    """One scripted model turn calling a freeform (``custom``) tool such as Codex's
    ``apply_patch``: ``text`` is its whole input."""

    name: str
    text: str


class Script(Recorder):
    def __init__(self, calls: Sequence[FunctionCall | CustomCall]) -> None:
        super().__init__()
        self.calls = calls

    def turns(self) -> list[Seen]:
        return [s for s in self.seen if s.path.split("?")[0].endswith("/responses")
                and isinstance(s.body, dict)]



def outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``function_call_output`` (or ``custom_tool_call_output``) item in a request's
    input, in order."""
    items = body.get("input")
    if not isinstance(items, list):
        return []
    return [i for i in items if isinstance(i, dict)
            and i.get("type") in ("function_call_output", "custom_tool_call_output")]


def next_item(script: Script, body: dict[str, Any]) -> dict[str, Any]:
    done = len(outputs(body))
    if done >= len(script.calls):
        return {"type": "message", "id": f"msg_{uuid.uuid4().hex}", "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}]}
    call = script.calls[done]
    if isinstance(call, CustomCall):
        return {"type": "custom_tool_call", "id": f"ctc_{uuid.uuid4().hex}",
                "call_id": f"call_{done:02d}_{uuid.uuid4().hex[:12]}", "name": call.name,
                "input": call.text, "status": "completed"}
    arguments = call.arguments(body) if callable(call.arguments) else call.arguments
    return {"type": "function_call", "id": f"fc_{uuid.uuid4().hex}",
            "call_id": f"call_{done:02d}_{uuid.uuid4().hex[:12]}", "name": call.name,
            "arguments": json.dumps(arguments), "status": "completed"}


def events(item: dict[str, Any], model: str) -> Iterator[dict[str, Any]]:
    rid = f"resp_{uuid.uuid4().hex}"
    base = {"id": rid, "object": "response", "created_at": 1765000000, "model": model,
            "status": "in_progress", "output": []}
    yield {"type": "response.created", "response": base}
    yield {"type": "response.in_progress", "response": base}
    if item["type"] == "function_call":
        yield {"type": "response.output_item.added", "output_index": 0,
               "item": {**item, "arguments": "", "status": "in_progress"}}
        yield {"type": "response.function_call_arguments.delta", "output_index": 0,
               "item_id": item["id"], "delta": item["arguments"]}
        yield {"type": "response.function_call_arguments.done", "output_index": 0,
               "item_id": item["id"], "arguments": item["arguments"]}
    elif item["type"] == "custom_tool_call":
        yield {"type": "response.output_item.added", "output_index": 0,
               "item": {**item, "input": "", "status": "in_progress"}}
        yield {"type": "response.custom_tool_call_input.delta", "output_index": 0,
               "item_id": item["id"], "delta": item["input"]}
    else:
        text = item["content"][0]["text"]
        yield {"type": "response.output_item.added", "output_index": 0,
               "item": {**item, "content": [], "status": "in_progress"}}
        yield {"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
               "item_id": item["id"], "delta": text}
    yield {"type": "response.output_item.done", "output_index": 0, "item": item}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 15}
    yield {"type": "response.completed",
           "response": {**base, "status": "completed", "output": [item], "usage": usage}}


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, status: int, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_CONNECT(self) -> None:
            """A tunnel beyond loopback: logged, refused."""
            script.record(Seen("CONNECT", self.path, dict(self.headers.items()), None))
            self._json(403, {"error": "no network beyond loopback in tests"})

        def do_GET(self) -> None:
            script.record(Seen("GET", self.path, dict(self.headers.items()), None))
            if self.path.split("?")[0].endswith("/models"):
                self._json(200, {"object": "list", "data": [], "models": []})
            else:
                self._json(404, {"error": {"message": self.path}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw[:200].decode("utf-8", "replace")
            script.record(Seen("POST", self.path, dict(self.headers.items()), body))
            if not self.path.split("?")[0].endswith("/responses") or not isinstance(body, dict):
                self._json(404, {"error": {"message": self.path}})
                return
            item = next_item(script, body)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for event in events(item, str(body.get("model") or "gpt-rig")):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            self.close_connection = True

    return Handler


class ResponsesServer(LoopbackServer):
    """The scripted server on 127.0.0.1 (an ephemeral port), in a thread."""

    def __init__(self, calls: Sequence[FunctionCall | CustomCall]) -> None:
        self.script = Script(calls)
        super().__init__(_handler(self.script))
