"""Fixtures of the server tests (the machinery is in ``server_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from procs import live
from server_helpers import Served, serve

from kit import CHROMIUM

if TYPE_CHECKING:
    from playwright.sync_api import Browser

__all__ = ["live"]  # real `signoff serve` processes on both backends (procs.py)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for a module's tests that change nothing they share."""
    yield from serve(tmp_path_factory.mktemp("shared"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, through Playwright: one per test module (the browser
    tests, slow, skip where there is none)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                     args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield launched
        finally:
            launched.close()
