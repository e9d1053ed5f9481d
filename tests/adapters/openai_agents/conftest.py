"""Fixtures of the OpenAI Agents SDK adapter tests; the machinery is in ``oai_helpers``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from oai_helpers import Harness, harness


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    made = harness(tmp_path)
    yield made
    made.gate.store.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
