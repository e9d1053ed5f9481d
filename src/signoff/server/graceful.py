"""A uvicorn server that Ctrl-C and SIGTERM stop gracefully, and that says which did.

uvicorn catches SIGINT and SIGTERM, finishes the requests in flight (up to
``timeout_graceful_shutdown``), then raises the signal again: Ctrl-C ends in a
``KeyboardInterrupt`` traceback, SIGTERM in death by signal. Here the signal is caught
(from before the event loop starts to after it ends) and kept (``stopped_by``), not raised
again, so the command can say goodbye in one line and exit 0. ``on_stopping`` runs as
the shutdown begins, before the server waits for the requests in flight: the approval
server uses it to answer its long-polls and end its event streams at once, instead of
having them cut when the wait runs out.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Generator
from types import FrameType

import uvicorn

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE = 5  # seconds a request in flight may take to finish once a stop is asked


class GracefulServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, *,
                 on_stopping: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self.on_stopping = on_stopping
        self.stopped_by: str | None = None  # "SIGINT" or "SIGTERM", once one arrived

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.stopped_by is None:
            self.stopped_by = signal.Signals(sig).name
        super().handle_exit(sig, frame)  # a second Ctrl-C stops without waiting

    @contextlib.contextmanager
    def stop_signals(self) -> Generator[None, None, None]:
        """From here on SIGINT and SIGTERM only ask this server to stop. Enter it before
        announcing the server and starting the event loop: a signal raised as an exception
        in between can land anywhere (inside a lock, or in the loop's own Ctrl-C handler,
        whose cancel uvicorn's start-up can swallow — a server that never stops)."""
        if threading.current_thread() is not threading.main_thread():
            yield  # only the main thread receives signals (a ServerThread is stopped)
            return
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        try:
            yield
        finally:  # put back what was there; the signal is kept in stopped_by, not re-raised
            for sig, handler in originals.items():
                signal.signal(sig, handler)

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        with self.stop_signals():
            super().run(sockets=sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # ``stop_signals`` holds the handlers, for the whole run

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.on_stopping is not None:
            self.on_stopping()
        await super().shutdown(sockets=sockets)
