"""Fixtures of the server tests (the machinery is in ``server_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from procs import live
from server_helpers import Served, serve

__all__ = ["live"]  # real `signoff serve` processes on both backends (procs.py)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for a module's tests that change nothing they share."""
    yield from serve(tmp_path_factory.mktemp("shared"))
