"""The listening socket ``signoff serve`` binds itself (``running.bind``)."""

from __future__ import annotations

import asyncio
import socket

from signoff.server.running import bind


def test_accepted_connections_get_tcp_nodelay() -> None:
    """asyncio turns on TCP_NODELAY only for sockets whose proto is IPPROTO_TCP, and accepted
    sockets inherit the listener's proto. Without it, a response written in two pieces
    (headers, then body) on a kept-alive connection waited for the client's delayed ACK:
    about 40 ms on every long-poll wake (found by bench/http_bench.py)."""
    listener = bind("127.0.0.1", 0)
    port = listener.getsockname()[1]

    async def accept_one() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                return await asyncio.wait_for(accepted, 10)
            finally:
                writer.close()
                await writer.wait_closed()

    try:
        assert listener.proto == socket.IPPROTO_TCP
        assert asyncio.run(accept_one()) != 0
    finally:
        listener.close()
