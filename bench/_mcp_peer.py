"""The helpers ``mcp_bench.py`` starts as processes of their own.

    python bench/_mcp_peer.py echo                  # an MCP server over stdio, one tool: echo
    python bench/_mcp_peer.py relay -- CMD …        # a bare pass-through relay to CMD
    python bench/_mcp_peer.py pipe-relay -- CMD …   # the same, asyncio pipes to the client
    python bench/_mcp_peer.py profile OUT -- ARGS…  # `signoff ARGS…`, every thread profiled

``echo`` is the official SDK's low-level ``Server`` with one tool, ``echo``, whose
result is the ``text`` argument given back: the server's own time is small and the same
for every system the bench measures.

``relay`` is the floor of any stdio MCP proxy built on the official SDK's transports:
``stdio_server()`` towards the client, ``stdio_client()`` towards the server (a child
process), and two tasks forwarding every ``SessionMessage`` as it comes, both ways —
no gate, no bookkeeping, no task per call. ``signoff mcp-proxy`` minus this relay is
signoff's own cost; this relay minus calling the server directly is the cost of the
extra process hop on those transports.

``pipe-relay`` is that relay with the client's side read and written through asyncio
pipes (``connect_read_pipe`` / ``connect_write_pipe`` on fds 0 and 1) instead of the
SDK's ``stdio_server()``, which reads each line and writes and flushes each message in
a worker thread (``anyio.wrap_file``): three thread hand-offs per call. The server's
side is still ``stdio_client()``. It shows what the hop costs without those hand-offs.

``profile`` runs ``signoff.cli.main(ARGS)`` with a ``cProfile.Profile`` in every thread
(the event loop, the worker threads, the verdict log's writer) and writes their merged
statistics to OUT (``pstats``) when the process exits.
"""

from __future__ import annotations

import asyncio
import atexit
import cProfile
import os
import pstats
import sys
import threading
from typing import Any

import anyio
import mcp_types
from mcp import types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

ECHO = types.Tool(name="echo", description="gives its text argument back",
                  input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                                "required": ["text"]},
                  annotations=types.ToolAnnotations(read_only_hint=True))


async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO])


async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "echo":
        raise ValueError(f"no tool {params.name}")
    text = str((params.arguments or {}).get("text", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def echo() -> None:
    server: Server[Any] = Server("signoff-bench-echo", version="1.0",
                                 on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def relay(command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_server() as (client_read, client_write), \
            stdio_client(params) as (upstream_read, upstream_write):

        async def pump(source: Any, sink: Any, scope: anyio.CancelScope) -> None:
            async with source:
                async for item in source:
                    if not isinstance(item, Exception):
                        await sink.send(item)
            scope.cancel()  # one side closed: the session is over

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump, upstream_read, client_write, tg.cancel_scope)
            await pump(client_read, upstream_write, tg.cancel_scope)
        with anyio.CancelScope(shield=True):
            await client_write.aclose()
            await upstream_write.aclose()


async def pipe_relay(command: list[str]) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(os.dup(0), "rb", 0))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(os.dup(1), "wb", 0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(params) as (upstream_read, upstream_write):

        async def down(scope: anyio.CancelScope) -> None:
            async with upstream_read:
                async for item in upstream_read:
                    if not isinstance(item, Exception):
                        writer.write(item.message.model_dump_json(
                            by_alias=True, exclude_unset=True).encode() + b"\n")
                        await writer.drain()
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(down, tg.cancel_scope)
            while line := await reader.readline():
                try:
                    message = mcp_types.jsonrpc_message_adapter.validate_json(line,
                                                                             by_name=False)
                except ValueError:
                    continue
                await upstream_write.send(SessionMessage(message))
            tg.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await upstream_write.aclose()


def profile(out: str, args: list[str]) -> int:
    import signoff.adapters.mcp  # imported before profiling starts
    import signoff.cli

    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def in_thread(*_: Any) -> None:  # the first event of each new thread
        sys.setprofile(None)
        profiler = cProfile.Profile()
        with lock:
            profiles.append(profiler)
        profiler.enable()

    def dump() -> None:
        with lock:
            for profiler in profiles:
                profiler.disable()
            merged = pstats.Stats(profiles[0])
            for profiler in profiles[1:]:
                merged.add(profiler)
        merged.dump_stats(out)

    threading.setprofile(in_thread)
    main_thread = cProfile.Profile()
    profiles.append(main_thread)
    atexit.register(dump)
    main_thread.enable()
    return signoff.cli.main(args)


def main(argv: list[str]) -> None:
    if argv[:1] == ["echo"]:
        anyio.run(echo)
    elif argv[:1] == ["relay"]:
        command = argv[1:]
        if command[:1] == ["--"]:
            command = command[1:]
        if not command:
            raise SystemExit("relay needs the server's command after --")
        anyio.run(relay, command)
    elif argv[:1] == ["pipe-relay"]:
        command = argv[2:] if argv[1:2] == ["--"] else argv[1:]
        if not command:
            raise SystemExit("pipe-relay needs the server's command after --")
        anyio.run(pipe_relay, command)
    elif argv[:1] == ["profile"] and len(argv) > 2:
        args = argv[3:] if argv[2] == "--" else argv[2:]
        raise SystemExit(profile(argv[1], args))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
