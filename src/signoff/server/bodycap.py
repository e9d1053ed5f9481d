"""``BodyCap``: no route reads more of a request body than the server's limit.

A route that reads its body first and checks it after (a Slack callback is
checked for its signature only once it is whole) lets any client make the
server hold whatever it sends. This pure ASGI middleware stops that before any
route runs: a ``Content-Length`` above the limit is answered 413 ``too_large``
without reading a byte of the body, and a body without one (chunked) is
counted as it arrives — the read that crosses the limit raises ``BodyTooLarge``,
so at most one chunk beyond the limit is ever held, and whatever the route
makes of that (a form parser turns any failure into a 400) is answered as the
413 it is.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.errors import BodyTooLarge
from signoff.server.bodies import MAX_BODY
from signoff.server.problems import problem


class BodyCap:
    def __init__(self, app: ASGIApp, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = [v for k, v in scope.get("headers", ()) if k.lower() == b"content-length"]
        if declared and (not declared[0].isdigit() or int(declared[0]) > self.limit):
            await problem(413, "too_large", f"the body exceeds {self.limit} bytes")(
                scope, receive, send)
            return
        received = 0
        over = started = replaced = False
        refusal = problem(413, "too_large", f"the body exceeds {self.limit} bytes")

        async def capped() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    over = True
                    raise BodyTooLarge(f"the body exceeds {self.limit} bytes")
            return message

        async def watched(message: Message) -> None:
            nonlocal started, replaced
            if over and message["type"] == "http.response.start" and not started:
                started = replaced = True
                await refusal(scope, receive, send)  # the route's answer is dropped
                return
            if replaced:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, capped, watched)
        except BodyTooLarge:  # read outside any route's problem handlers
            if started:
                raise
            await refusal(scope, receive, send)
