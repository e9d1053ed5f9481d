"""The proxy is stopping (Ctrl-C, SIGTERM): calls waiting for a human are answered first.

A call waiting for a decision stops waiting and gets its result at once — the request
still pending in the inbox, the same call made again later joins it — instead of being
cut off with the session (or withdrawn as if the client had cancelled it). Calls
already running upstream are left to finish within the grace period.
"""

from __future__ import annotations

import signal

import anyio

GRACE = 5.0  # seconds calls already running may take to finish once the proxy stops


class Stopping:
    """Set once, from the event loop; every waiter wakes."""

    def __init__(self) -> None:
        self.signal: str | None = None  # "SIGINT" or "SIGTERM", once stopping
        self._events: list[anyio.Event] = []

    @property
    def why(self) -> str | None:
        return f"the proxy stopped ({self.signal})" if self.signal else None

    def stop(self, signal: str) -> None:
        if self.signal is None:
            self.signal = signal
        for event in self._events:
            event.set()

    async def wait(self) -> None:
        """Return once the proxy is stopping."""
        if self.signal is not None:
            return
        event = anyio.Event()
        self._events.append(event)
        try:
            await event.wait()
        finally:
            self._events.remove(event)


async def stop_on_signal(stopping: Stopping) -> None:
    """Turn the first SIGINT or SIGTERM into ``stopping.stop``; then the handlers that were
    there before are put back, so a second signal does not wait."""
    signals = (signal.SIGINT, signal.SIGTERM)
    before = {sig: signal.getsignal(sig) for sig in signals}
    try:
        with anyio.open_signal_receiver(*signals) as received:
            async for sig in received:
                stopping.stop(signal.Signals(sig).name)
                return
    finally:  # the event loop leaves its defaults behind (SIG_DFL: death by SIGTERM)
        for sig, handler in before.items():
            if handler is not None:
                signal.signal(sig, handler)
