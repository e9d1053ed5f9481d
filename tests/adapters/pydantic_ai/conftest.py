"""Fixtures of the Pydantic AI adapter tests; the machinery is in ``pyd_helpers``."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyd_helpers import Harness, harness


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    made = harness(tmp_path)
    yield made
    made.gate.store.close()


@pytest.fixture(autouse=True)
def _event_loop_closed() -> Iterator[None]:
    """``Agent.run_sync`` leaves the event loop it set for the thread open, for the next
    call to reuse (``pydantic_ai._utils.get_event_loop``); a later test that sets another
    would drop it unclosed, a ``ResourceWarning`` in that test. Each test closes it."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)
