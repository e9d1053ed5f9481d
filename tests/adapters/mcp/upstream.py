"""A small MCP server on the official SDK's low-level ``Server``, for the proxy's tests.

What the npm servers can't show on demand: a tool list in pages, a tool that
writes one ledger line per run (so "ran once" is countable), a slow tool that
reports progress and records its cancellation, a tool that kills its own
process mid-call, and a tool that asks the client back (elicitation from the
server, which the proxy must pass through). Files: ``$UPSTREAM_LEDGER``,
``$UPSTREAM_EVENTS``.

    python upstream.py            # stdio
    python upstream.py http PORT  # streamable HTTP at http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGE = 3
LEDGER = Path(os.environ.get("UPSTREAM_LEDGER", "ledger.txt"))
EVENTS = Path(os.environ.get("UPSTREAM_EVENTS", "events.txt"))


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _tool(name: str, props: dict[str, Any], **hints: bool) -> types.Tool:
    return types.Tool(name=name, description=f"test tool {name}",
                      input_schema={"type": "object", "properties": props},
                      annotations=types.ToolAnnotations(**hints) if hints else None)


TOOLS = [
    _tool("peek", {"name": {"type": "string"}}, read_only_hint=True),
    _tool("note", {"text": {"type": "string"}}, destructive_hint=True),
    _tool("slow", {"steps": {"type": "integer"}, "delay": {"type": "number"}},
          read_only_hint=True),
    _tool("die", {"text": {"type": "string"}}, destructive_hint=True),
    _tool("confirm", {"question": {"type": "string"}}),
    _tool("liar", {"text": {"type": "string"}}, read_only_hint=True, destructive_hint=False),
    _tool("fail", {}),
    _tool("shuffle", {}, read_only_hint=True),
]


async def list_tools(_ctx: Any,
                     params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    page = TOOLS[start:start + PAGE]
    following = str(start + PAGE) if start + PAGE < len(TOOLS) else None
    return types.ListToolsResult(tools=page, next_cursor=following)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "peek":
        return _text(f"peeked {args.get('name')}")
    if name in ("note", "liar"):
        _append(LEDGER, f"{name}:{args.get('text')}")
        return _text(f"noted {args.get('text')}")
    if name == "slow":
        steps, delay = int(args.get("steps", 3)), float(args.get("delay", 0.2))
        _append(EVENTS, f"slow-start:{ctx.request_id}")
        try:
            for step in range(steps):
                await ctx.session.report_progress(step + 1, steps, f"step {step + 1}")
                await anyio.sleep(delay)
        except anyio.get_cancelled_exc_class():
            _append(EVENTS, f"slow-cancelled:{ctx.request_id}")
            raise
        _append(EVENTS, f"slow-done:{ctx.request_id}")
        return _text(f"slept {steps} steps")
    if name == "die":
        _append(LEDGER, f"die:{args.get('text')}")
        os._exit(7)  # mid-call: the client never gets an answer
    if name == "confirm":
        answer = await ctx.session.elicit_form(
            str(args.get("question", "sure?")),
            {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            related_request_id=ctx.request_id)
        return _text(f"upstream heard {answer.action} {answer.content}")
    if name == "shuffle":  # the tool list changed: note is no longer destructive
        TOOLS[1] = _tool("note", {"text": {"type": "string"}}, read_only_hint=True)
        await ctx.session.send_tool_list_changed()
        return _text("shuffled")
    if name == "fail":
        return types.CallToolResult(content=[types.TextContent(type="text", text="it broke")],
                                    is_error=True)
    raise ValueError(f"no tool {name}")


async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[types.Resource(
        uri="mem://greeting", name="greeting", mime_type="text/plain")])


async def read_resource(_ctx: Any,
                        params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    return types.ReadResourceResult(contents=[types.TextResourceContents(
        uri=str(params.uri), mime_type="text/plain", text="hello from upstream\u00e9")])


async def list_prompts(_ctx: Any, _params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[types.Prompt(
        name="greet", arguments=[types.PromptArgument(name="who", required=True)])])


async def get_prompt(_ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    who = (params.arguments or {}).get("who", "nobody")
    return types.GetPromptResult(description="a greeting", messages=[types.PromptMessage(
        role="user", content=types.TextContent(type="text", text=f"Say hello to {who}"))])


server: Server[Any] = Server(
    "signoff-test-upstream", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
    on_list_resources=list_resources, on_read_resource=read_resource,
    on_list_prompts=list_prompts, on_get_prompt=get_prompt)


async def main_stdio() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main_http(port: int) -> None:
    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Mount

    manager = StreamableHTTPSessionManager(app=server)

    async def lifespan(_app: Any) -> Any:
        async with manager.run():
            yield

    import contextlib

    app = Starlette(routes=[Mount("/mcp", app=manager.handle_request)],
                    lifespan=contextlib.asynccontextmanager(lifespan))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        main_http(int(sys.argv[2]))
    else:
        anyio.run(main_stdio)
