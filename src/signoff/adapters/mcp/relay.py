"""One MCP session between a client and an upstream server, message by message.

The relay works on JSON-RPC messages as the official SDK's transports hand them
over (``SessionMessage``), not on a typed session of its own: everything but
``tools/call`` — initialize and its capabilities, the tools/resources/prompts
lists and their pages, their change notifications, resource reads and
subscriptions, prompts, completions, logging, pings, progress, cancellation,
the server's own requests to the client (sampling, elicitation, roots) — goes
through as it came (the server's requests under ids of the proxy's: below), so the
two ends negotiate with each other and nothing signoff does not understand is lost.
``tools/call`` requests go to the ``CallGate`` (``calls.py``), each in its own
task, so one call waiting for a human holds up nothing else.

The relay watches a few things on the way: the client's capabilities (does it
take ``elicitation/create``?), the tool lists the server sends (their
annotations are hints for the policy, ``signoff.policy.hints``), progress
tokens (to route the server's progress to the call's HTTP stream), and
cancellations (of a call waiting for a decision, which never reached the
server).

Ids. Requests the proxy makes itself (an elicitation to the client, a
``tools/list`` to the server) carry ids neither side can see coming: a random
prefix per direction and a fresh random part per request, so what the server
learns from the proxy's ``tools/list`` says nothing of the ids of the dialogs
the client gets. Requests from the server to the client (elicitation,
sampling, roots) are sent on under fresh ids of the same kind and their
answers mapped back: only the answer to the exact dialog the proxy sent is
taken as the person's approval, however the server numbers its own questions.
A response from the server to nothing the proxy or the client asked is
dropped. A client request reusing the id of one still in flight is refused
(JSON-RPC ``-32600``): the first keeps its id, and its cancellation still
withdraws it.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

log = logging.getLogger("signoff.mcp")

RequestId = int | str
UPSTREAM_GONE = -32000  # a JSON-RPC server error: the upstream server went away
INVALID_REQUEST = -32600


class UpstreamGone(Exception):
    """The upstream server closed (exited, crashed, dropped the connection)."""


class CallCancelled(Exception):
    """The client cancelled a call the server was running."""


@dataclass
class Reply:
    """A response some task is waiting for."""

    event: anyio.Event = field(default_factory=anyio.Event)
    message: JSONRPCResponse | JSONRPCError | None = None
    failure: Exception | None = None

    def settle(self, message: JSONRPCResponse | JSONRPCError | None = None,
               failure: Exception | None = None) -> None:
        if not self.event.is_set():
            self.message, self.failure = message, failure
            self.event.set()

    async def wait(self) -> JSONRPCResponse | JSONRPCError:
        await self.event.wait()
        if self.failure is not None:
            raise self.failure
        assert self.message is not None
        return self.message


CallHandler = Callable[["Relay", JSONRPCRequest], Awaitable[None]]
ListHandler = Callable[["Relay", JSONRPCRequest | None, JSONRPCResponse], None]


class Relay:
    """Pumps messages both ways until either side closes."""

    def __init__(self, client: tuple[Any, Any], upstream: tuple[Any, Any], *,
                 on_call: CallHandler, on_tools: ListHandler) -> None:
        self.client_read, self.client_write = client
        self.upstream_read, self.upstream_write = upstream
        self.on_call = on_call
        self.on_tools = on_tools
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        self.protocol_meta: dict[str, Any] = {}  # a modern client's per-request envelope
        self.upstream_gone = False
        self.client_gone = False
        # Per direction: a prefix of its own, and a fresh random part per request.
        self._to_client_prefix = f"signoff-{secrets.token_hex(8)}-"
        self._to_upstream_prefix = f"signoff-{secrets.token_hex(8)}-"
        self._upstream_replies: dict[RequestId, Reply] = {}  # forwarded calls, own requests
        self._client_replies: dict[RequestId, Reply] = {}  # the proxy's own requests
        self._forwarded: dict[RequestId, JSONRPCRequest] = {}  # other client requests
        self._remapped: dict[str, RequestId] = {}  # id toward the client -> the server's id
        self._call_ids: set[RequestId] = set()  # tools/call requests in flight
        self._progress: dict[Any, RequestId] = {}  # progress token -> client request id
        self._calls: dict[RequestId, anyio.CancelScope] = {}  # gated calls not yet forwarded
        self._tg: TaskGroup | None = None
        self._active = 0  # tools/call tasks running
        self.ending: str | None = None  # why the session is ending, once it is

    # ---- running -----------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._upstream_then_end, tg)
                await self._from_client()
                # The client is gone: nothing more can be answered. Calls waiting for a
                # human stop waiting (their requests stay pending and expire: nothing runs).
                self.client_gone = True
                tg.cancel_scope.cancel()
        finally:
            # The transports' writers end when their streams close: without this the
            # session would never finish (stdio would wait on stdout forever).
            with anyio.CancelScope(shield=True):
                await self.client_write.aclose()
                await self.upstream_write.aclose()

    async def _upstream_then_end(self, tg: TaskGroup) -> None:
        await self._from_upstream()
        # The server is gone: calls it was running have their answers (UpstreamGone);
        # calls still waiting for a human are withdrawn; then the session ends.
        self.ending = "the MCP server closed"
        for scope in list(self._calls.values()):
            scope.cancel()
        with anyio.move_on_after(10):
            while self._active:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()

    @property
    def calls_waiting(self) -> int:
        return len(self._calls)

    @property
    def calls_active(self) -> int:
        """``tools/call`` requests not yet answered (waiting, or running upstream)."""
        return self._active

    # ---- client → upstream -------------------------------------------------------------------

    async def _from_client(self) -> None:
        try:
            async with self.client_read:
                async for item in self.client_read:
                    if isinstance(item, Exception):  # a line the transport could not parse
                        log.warning("unreadable message from the client: %s", item)
                        continue
                    await self._client_message(item.message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the transport went away (an HTTP session ended): the client is gone

    async def _client_message(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            if message.id in self._call_ids or message.id in self._forwarded:
                # The first request keeps its id (its answer, its cancellation).
                await self.to_client(JSONRPCError(jsonrpc="2.0", id=message.id, error=ErrorData(
                    code=INVALID_REQUEST, message="this request id is already in use by a "
                    "request in flight; use a new id")))
                return
            params = message.params or {}
            if message.method == "initialize":
                self.client_capabilities = dict(params.get("capabilities") or {})
                self.client_info = dict(params.get("clientInfo") or {})
            token = (params.get("_meta") or {}).get("progressToken") \
                if isinstance(params.get("_meta"), dict) else None
            if token is not None:
                self._progress[token] = message.id
            if message.method == "tools/call":
                assert self._tg is not None
                self._call_ids.add(message.id)
                self._tg.start_soon(self._call, message)
                return
            self._forwarded[message.id] = message
            await self._to_upstream(message)
            return
        if isinstance(message, JSONRPCNotification):
            if message.method == "notifications/cancelled":
                target = (message.params or {}).get("requestId")
                scope = self._calls.get(target) if isinstance(target, int | str) else None
                if scope is not None:  # never reached the server: stop waiting here
                    scope.cancel()
                    return
                running = self._upstream_replies.get(target) \
                    if isinstance(target, int | str) else None
                if running is not None:  # forwarded: the server is told, the call stops waiting
                    running.settle(failure=CallCancelled(str((message.params or {}).get(
                        "reason") or "cancelled by the client")))
            await self._to_upstream(message)
            return
        # A response: to one of the proxy's own requests, or to the server's (under the id
        # the proxy gave it), or to nothing.
        if not isinstance(message.id, str):
            log.warning("a response from the client to no request: dropped")
            return
        reply = self._client_replies.pop(message.id, None)
        if reply is not None:
            reply.settle(message)
            return
        original = self._remapped.pop(message.id, None)
        if original is None:
            log.warning("a response from the client to no request: dropped")
            return
        await self._to_upstream(message.model_copy(update={"id": original}))

    async def _call(self, message: JSONRPCRequest) -> None:
        self._active += 1
        with anyio.CancelScope() as scope:
            self._calls[message.id] = scope
            try:
                await self.on_call(self, message)
            finally:
                self._active -= 1
                self._calls.pop(message.id, None)
                self._call_ids.discard(message.id)
                self._drop_progress(message.id)
        if scope.cancelled_caught and not self.client_gone:
            log.info("call %r cancelled by the client", message.id)

    def forwarding(self, request_id: RequestId) -> None:
        """The call is going to the server now: a cancellation goes there too."""
        self._calls.pop(request_id, None)

    # ---- upstream → client -------------------------------------------------------------------

    async def _from_upstream(self) -> None:
        try:
            async with self.upstream_read:
                async for item in self.upstream_read:
                    if isinstance(item, Exception):
                        log.warning("unreadable message from the server: %s", item)
                        continue
                    await self._upstream_message(item.message)
        finally:
            self.upstream_gone = True
            await self._fail_upstream_waiters()

    async def _upstream_message(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            if message.id is not None:
                reply = self._upstream_replies.pop(message.id, None)
                if reply is not None:
                    reply.settle(message)
                    return
                asked = self._forwarded.pop(message.id, None)
                if asked is None:
                    log.warning("a response from the server to no request: dropped")
                    return
                if asked.method == "tools/list" and isinstance(message, JSONRPCResponse):
                    self.on_tools(self, asked, message)
                self._drop_progress(message.id)
            await self.to_client(message)
            return
        if isinstance(message, JSONRPCRequest):
            # The server's own question to the client: under a fresh id of the proxy's, so
            # that it can never pass for (or be answered as) the proxy's own dialog.
            fresh = self.own_id(to_client=True)
            self._remapped[fresh] = message.id
            await self.to_client(message.model_copy(update={"id": fresh}))
            return
        related: RequestId | None = None
        if isinstance(message, JSONRPCNotification):
            params = message.params or {}
            if message.method == "notifications/cancelled":  # of one of its own questions
                target = params.get("requestId")
                fresh_id = next((k for k, v in self._remapped.items() if v == target), None)
                if fresh_id is None:
                    return  # of nothing the client was asked
                del self._remapped[fresh_id]
                message = message.model_copy(update={"params": {**params,
                                                                "requestId": fresh_id}})
            elif message.method == "notifications/progress":
                related = self._progress.get(params.get("progressToken"))
            elif message.method == "notifications/tools/list_changed":
                self.on_tools(self, None, JSONRPCResponse(jsonrpc="2.0", id=0,
                                                          result={"changed": True}))
        await self.to_client(message, related=related)

    async def _fail_upstream_waiters(self) -> None:
        gone = UpstreamGone("the MCP server closed")
        for reply in list(self._upstream_replies.values()):
            reply.settle(failure=gone)
        self._upstream_replies.clear()
        forwarded, self._forwarded = self._forwarded, {}
        if self.client_gone:
            return
        for request in forwarded.values():
            with anyio.CancelScope(shield=True):
                await self._try_send_client(JSONRPCError(
                    jsonrpc="2.0", id=request.id,
                    error=ErrorData(code=UPSTREAM_GONE, message="the MCP server behind the "
                                    "signoff proxy closed before answering")))

    def _drop_progress(self, request_id: RequestId) -> None:
        for token in [t for t, owner in self._progress.items() if owner == request_id]:
            del self._progress[token]

    # ---- sending -----------------------------------------------------------------------------

    async def to_client(self, message: JSONRPCMessage, *, related: RequestId | None = None) -> None:
        metadata = ServerMessageMetadata(related_request_id=related) if related is not None \
            else None
        await self.client_write.send(SessionMessage(message, metadata=metadata))

    async def _try_send_client(self, message: JSONRPCMessage) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self.to_client(message)

    async def _to_upstream(self, message: JSONRPCMessage) -> None:
        if self.upstream_gone:
            if isinstance(message, JSONRPCRequest):
                self._forwarded.pop(message.id, None)
                await self.to_client(JSONRPCError(jsonrpc="2.0", id=message.id, error=ErrorData(
                    code=UPSTREAM_GONE, message="the MCP server behind the signoff proxy "
                    "has closed")))
            return
        try:
            await self.upstream_write.send(SessionMessage(message))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.upstream_gone = True
            if isinstance(message, JSONRPCRequest):
                self._forwarded.pop(message.id, None)
                await self.to_client(JSONRPCError(jsonrpc="2.0", id=message.id, error=ErrorData(
                    code=UPSTREAM_GONE, message="the MCP server behind the signoff proxy "
                    "has closed")))

    async def ask_upstream(self, request: JSONRPCRequest) -> JSONRPCResponse | JSONRPCError:
        """Send a request to the server and wait for its answer (``UpstreamGone`` if it
        closes first). A forwarded ``tools/call`` keeps the client's id."""
        if self.upstream_gone:
            raise UpstreamGone("the MCP server closed")
        reply = Reply()
        self._upstream_replies[request.id] = reply
        try:
            await self.upstream_write.send(SessionMessage(request))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._upstream_replies.pop(request.id, None)
            self.upstream_gone = True
            raise UpstreamGone("the MCP server closed") from None
        try:
            answer = await reply.wait()
        finally:
            self._upstream_replies.pop(request.id, None)
        if isinstance(answer, JSONRPCError) and answer.error.code == CONNECTION_CLOSED:
            # The HTTP transport's stand-in for an answer that can never come (the
            # connection dropped mid-request): the call's outcome is lost, not an error.
            raise UpstreamGone(answer.error.message)
        return answer

    async def cancel_upstream(self, request_id: RequestId, reason: str) -> None:
        """Tell the server a forwarded request is no longer wanted."""
        self._upstream_replies.pop(request_id, None)
        if not self.upstream_gone:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await self.upstream_write.send(SessionMessage(JSONRPCNotification(
                        jsonrpc="2.0", method="notifications/cancelled",
                        params={"requestId": request_id, "reason": reason})))

    async def ask_client(self, method: str, params: dict[str, Any], *,
                         related: RequestId | None = None) -> JSONRPCResponse | JSONRPCError:
        """A request of the proxy's own to the client (``elicitation/create``)."""
        request_id = self.own_id(to_client=True)
        reply = Reply()
        self._client_replies[request_id] = reply
        try:
            await self.to_client(JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method,
                                                params=params), related=related)
            return await reply.wait()
        except BaseException:
            if self._client_replies.pop(request_id, None) is not None and not self.client_gone:
                # Abandoned (decided elsewhere first, or cancelled): the client may close
                # its dialog.
                with anyio.CancelScope(shield=True):
                    await self._try_send_client(JSONRPCNotification(
                        jsonrpc="2.0", method="notifications/cancelled",
                        params={"requestId": request_id,
                                "reason": "decided elsewhere"}))
            raise

    def own_id(self, *, to_client: bool = False) -> str:
        """An id for a request of the proxy's own that neither side can see coming: per
        direction a prefix of its own, per request a fresh random part (a server that
        learnt one id could otherwise ask its own question under the next, and have the
        person's answer taken for the approval)."""
        prefix = self._to_client_prefix if to_client else self._to_upstream_prefix
        while True:
            candidate = prefix + secrets.token_hex(12)
            if candidate not in self._client_replies and candidate not in self._remapped \
                    and candidate not in self._upstream_replies:
                return candidate

    def related_progress(self, request: JSONRPCRequest) -> Any:
        """The progress token the client gave with ``request``, if any."""
        meta = (request.params or {}).get("_meta")
        return meta.get("progressToken") if isinstance(meta, dict) else None
