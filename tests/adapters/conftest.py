"""Fixtures of the LangChain adapter tests (machinery in ``lc_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lc_helpers import Harness, harness


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    made = harness(tmp_path)
    yield made
    for conn in made.agents:
        conn.close()
    made.gate.store.close()
