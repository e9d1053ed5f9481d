"""The remote client's tests talk to the server tests' real server (``server_helpers`` in
``tests/server``), as an agent on another machine would."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER_TESTS = str(Path(__file__).parents[1] / "server")
if SERVER_TESTS not in sys.path:
    sys.path.insert(0, SERVER_TESTS)
from server_helpers import Served, serve  # noqa: E402


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path)
