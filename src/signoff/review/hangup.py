"""Hanging up on a review that is past its deadline.

``httpx`` bounds each read, not the whole exchange: an endpoint that sends a
byte every few milliseconds keeps a request open for as long as it likes. The
reviewer's own HTTP client (``openai_client``) opens a fresh connection per
request and reports each socket here through ``httpcore``'s trace hook; when
the deadline passes, ``Hangup`` shuts those sockets down, which wakes the
blocked read at once: the request fails and its thread ends, instead of
reading the late answer nobody will obey.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Mapping
from typing import Any

_current = threading.local()


class Hangup:
    """Within ``with Hangup(seconds):`` every reviewer request on this thread is cut
    off after ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self.fire)
        self._timer.daemon = True

    def __enter__(self) -> Hangup:
        _current.hangup = self
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        _current.hangup = None
        with self._lock:
            self._sockets.clear()

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        """``httpcore``'s trace callback: keep each socket the request opens."""
        if event not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
            fired = self.fired
        if fired:
            _shut(sock)

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


def attach(request: Any) -> None:
    """An ``httpx`` request hook: a request sent under a ``Hangup`` reports its sockets."""
    hangup: Hangup | None = getattr(_current, "hangup", None)
    if hangup is not None:
        request.extensions["trace"] = hangup.trace
