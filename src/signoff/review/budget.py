"""How many model reviews a run, and the process, may spend.

A looping agent must not turn into a loop of paid model calls: each run gets
at most ``per_run`` reviews, and the process at most ``per_minute`` in any
sliding minute. A review over budget is not sent; the call goes to a human
(error ``review_budget``). Counted per process: several servers each keep
their own count.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

_RUNS_KEPT = 4096  # runs whose counts are remembered; the oldest is forgotten first


class ReviewBudget:
    """Thread-safe counters; ``take`` spends one review or says why it may not."""

    def __init__(self, *, per_run: int | None = 50, per_minute: int | None = 60,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_run = per_run
        self.per_minute = per_minute
        self.clock = clock
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, int] = OrderedDict()
        self._recent: deque[float] = deque()

    def take(self, run_id: str | None) -> str | None:
        """Spend one review for ``run_id``; ``None`` if allowed, else the reason it is not."""
        with self._lock:
            now = self.clock()
            while self._recent and now - self._recent[0] >= 60.0:
                self._recent.popleft()
            if self.per_minute is not None and len(self._recent) >= self.per_minute:
                return f"the reviewer's budget of {self.per_minute} reviews a minute is spent"
            used = self._runs.get(run_id, 0) if run_id else 0
            if run_id and self.per_run is not None and used >= self.per_run:
                return f"this run's budget of {self.per_run} reviews is spent"
            self._recent.append(now)
            if run_id:
                self._runs[run_id] = used + 1
                self._runs.move_to_end(run_id)
                if len(self._runs) > _RUNS_KEPT:
                    self._runs.popitem(last=False)
            return None
