"""Fixtures of the Agent Framework adapter tests; the machinery is in ``maf_helpers``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from maf_helpers import Harness, harness


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    made = harness(tmp_path)
    yield made
    made.gate.store.close()
