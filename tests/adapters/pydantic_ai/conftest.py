"""Fixtures of the Pydantic AI adapter tests; the machinery is in ``pyd_helpers``."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyd_helpers import Harness, harness, harness_at


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with the schema and the users, made once and copied for each test."""
    directory = tmp_path_factory.mktemp("pyd-template")
    harness_at(directory).gate.close()
    return directory


@pytest.fixture
def h(tmp_path: Path, template: Path) -> Iterator[Harness]:
    made = harness(tmp_path, template)
    yield made
    made.gate.close()


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
