"""Ctrl-C and SIGTERM end a long-running command (``serve``, ``mcp-proxy``) as a
well-behaved server does: what was in flight is finished or answered, one goodbye line on
stderr, exit 0 — never a ``KeyboardInterrupt`` traceback, never death by signal.

SIGTERM is handled as Ctrl-C is: inside an event loop as the loop's own Ctrl-C (its
tasks are cancelled and cleaned up), elsewhere as ``KeyboardInterrupt``. A uvicorn
server catches both itself while it serves (``signoff.server.graceful``) and reports
which one arrived in ``Stop.signal``.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType


@dataclass
class Stop:
    command: str  # "signoff serve", named in the goodbye line
    signal: str | None = None  # "SIGINT" or "SIGTERM", once one asked us to stop


@contextlib.contextmanager
def stoppable(command: str) -> Iterator[Stop]:
    """Run the block until it ends or a stop signal arrives; then say goodbye."""
    stop = Stop(command)

    def on_term(_sig: int, _frame: FrameType | None) -> None:
        stop.signal = stop.signal or "SIGTERM"
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
            raise KeyboardInterrupt
        signal.raise_signal(signal.SIGINT)  # an event loop's own Ctrl-C: a clean cancel

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield stop
    except KeyboardInterrupt:
        stop.signal = stop.signal or "SIGINT"
    finally:
        signal.signal(signal.SIGTERM, previous)
    if stop.signal:
        print(f"{command}: stopped ({stop.signal})", file=sys.stderr, flush=True)
