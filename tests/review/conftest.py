"""Fixtures for the reviewer tests: a scripted chat-completions server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from chat_server import ChatServer


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A started ``ChatServer``; script replies with ``chat_server.script(Reply...)``."""
    with ChatServer() as server:
        yield server
