"""The proxy's sessions and transports: stdio or streamable HTTP on each side.

``run_stdio`` speaks MCP on this process's stdin/stdout to one client (what
Claude Desktop, Cursor and VS Code start); ``serve_http`` serves streamable
HTTP to any number of clients, one session each. The upstream is a child
process (``upstream_command``), started per session, or a streamable-HTTP
server (``upstream_url``). Both sides use the official SDK's transports; the
relay (``relay.py``) sits between them.

Each session is a thread of its own (``mcp-<session id>``): its review mode is
the thread's, its interaction mode the command line's.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp_types import JSONRPCRequest, JSONRPCResponse

from signoff.adapters.mcp.asking import ApproverSpec, Asker
from signoff.adapters.mcp.calls import CallGate, Session
from signoff.adapters.mcp.hosts import HostGuard
from signoff.adapters.mcp.relay import Relay
from signoff.adapters.mcp.stopping import GRACE, Stopping, stop_on_signal
from signoff.kernel.gate import Gate
from signoff.model import InteractionMode, ReviewMode
from signoff.policy.modes import trusted_context

log = logging.getLogger("signoff.mcp")
Upstream = Callable[[], contextlib.AbstractAsyncContextManager[tuple[Any, Any]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyOptions:
    server: str | None = None  # the policy namespace; None: [mcp] server
    interaction: InteractionMode = InteractionMode.INTERACTIVE
    review_mode: ReviewMode | None = None
    wait_seconds: float = 300.0
    approver: ApproverSpec | None = None  # None: no elicitation, the inbox only
    inbox_url: str | None = None
    principal: str | None = None
    progress_every: float = 5.0
    stopping: Stopping | None = None  # set when the proxy stops: waiting calls are answered
    extra: dict[str, Any] = field(default_factory=dict)


def upstream_command(command: str, args: list[str], *, cwd: str | None = None,
                     errlog: Any = None) -> Upstream:
    """A child process per session, with this process's whole environment (the SDK's
    default would pass only a few variables)."""
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd=cwd)

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[tuple[Any, Any]]:
        async with stdio_client(params, errlog=errlog or sys.stderr) as streams:
            yield streams

    return connect


def upstream_url(url: str) -> Upstream:
    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[tuple[Any, Any]]:
        async with streamable_http_client(url) as streams:
            yield streams[0], streams[1]

    return connect


async def run_session(gate: Gate, options: ProxyOptions, client: tuple[Any, Any],
                      upstream: tuple[Any, Any], *, session_id: str) -> None:
    """Relay one session until the client leaves (or the server does)."""
    context = trusted_context(thread_id=f"mcp-{session_id}"[:128], session_id=None,
                              review_mode=options.review_mode,
                              interaction_mode=options.interaction,
                              principal=options.principal)
    session = Session(context=context)
    asker = Asker(gate, wait_seconds=options.wait_seconds, approver=options.approver,
                  inbox_url=options.inbox_url, progress_every=options.progress_every,
                  stopping=options.stopping)
    calls = CallGate(gate, asker, server=options.server)

    async def on_call(relay: Relay, message: JSONRPCRequest) -> None:
        await calls.handle(relay, session, message)

    def on_tools(_relay: Relay, asked: JSONRPCRequest | None, reply: JSONRPCResponse) -> None:
        if asked is None:
            calls.tools_changed()
        else:
            calls.learn_tools(reply.result, first_page=not (asked.params or {}).get("cursor"))

    relay = Relay(client, upstream, on_call=on_call, on_tools=on_tools)
    stopping = options.stopping
    if stopping is None:
        await relay.run()
        return
    async with anyio.create_task_group() as tg:

        async def end_when_stopped() -> None:
            await stopping.wait()  # waiting calls answer now; running ones get GRACE
            with anyio.move_on_after(GRACE):
                while relay.calls_active:
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()

        tg.start_soon(end_when_stopped)
        await relay.run()
        tg.cancel_scope.cancel()


async def run_stdio(gate: Gate, options: ProxyOptions, upstream: Upstream) -> None:
    """One session on stdin/stdout; with ``options.stopping``, the first SIGINT or SIGTERM
    answers the calls waiting for a human, then ends the session."""
    async with stdio_server() as client, upstream() as up, anyio.create_task_group() as tg:
        if options.stopping is not None:
            tg.start_soon(stop_on_signal, options.stopping)
        await run_session(gate, options, client, up, session_id=uuid.uuid4().hex[:16])
        tg.cancel_scope.cancel()
    gate.flush()


def http_app(gate: Gate, options: ProxyOptions, upstream: Upstream, *,
             guard: HostGuard) -> Any:
    """A Starlette app serving the proxy over streamable HTTP at ``/mcp``, behind ``guard``
    (``hosts.py``): a request under another name reaches no session."""
    from mcp.server.streamable_http import (  # noqa: PLC0415 (only for --listen)
        MCP_SESSION_ID_HEADER,
        StreamableHTTPServerTransport,
    )
    from starlette.applications import Starlette  # noqa: PLC0415
    from starlette.responses import JSONResponse, Response  # noqa: PLC0415
    from starlette.routing import Route  # noqa: PLC0415

    sessions: dict[str, StreamableHTTPServerTransport] = {}
    holder: dict[str, Any] = {}

    async def run_one(transport: StreamableHTTPServerTransport, session_id: str, *,
                      task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with transport.connect() as client:
                task_status.started()
                async with upstream() as up:
                    await run_session(gate, options, client, up, session_id=session_id)
        except Exception:
            log.exception("MCP session %s ended with an error", session_id)
        finally:
            sessions.pop(session_id, None)
            with anyio.CancelScope(shield=True):
                await transport.terminate()

    async def handle(scope: Any, receive: Any, send: Any) -> None:
        headers = dict((k.decode("latin-1").lower(), v.decode("latin-1"))
                       for k, v in scope.get("headers", []))
        session_id = headers.get(MCP_SESSION_ID_HEADER.lower())
        if session_id is not None:
            transport = sessions.get(session_id)
            if transport is None:
                await Response("Session not found", status_code=404)(scope, receive, send)
                return
            await transport.handle_request(scope, receive, send)
            return
        # Only an initialize opens a session (a 2026-07-28 client's server/discover probe
        # is answered 400, and it falls back to the handshake): read the body, then hand
        # it on unchanged.
        received: list[Any] = []
        body = b""
        while scope.get("method") == "POST":
            message = await receive()
            received.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            opening = json.loads(body) if body else None
        except ValueError:
            opening = None
        if not (isinstance(opening, dict) and opening.get("method") == "initialize"):
            rid = opening.get("id") if isinstance(opening, dict) else None
            await JSONResponse({"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32600, "message": "no session: this proxy serves sessions opened "
                "by initialize (send Mcp-Session-Id with every later request)"}},
                status_code=400)(scope, receive, send)
            return

        async def replay() -> Any:
            return received.pop(0) if received else await receive()

        session_id = uuid.uuid4().hex
        transport = StreamableHTTPServerTransport(mcp_session_id=session_id)
        sessions[session_id] = transport
        await holder["tg"].start(run_one, transport, session_id)
        await transport.handle_request(scope, replay, send)

    async def health(_request: Any) -> Any:
        return JSONResponse({"ok": True, "sessions": len(sessions)})

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            holder["tg"] = tg
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                gate.flush()

    class Endpoint:  # an ASGI app at exactly /mcp (a Mount would redirect /mcp to /mcp/)
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await handle(scope, receive, send)

    return guard.wrap(Starlette(routes=[
        Route("/healthz", health), Route("/mcp", Endpoint(), methods=["GET", "POST", "DELETE"])],
        lifespan=lifespan))
