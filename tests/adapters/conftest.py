"""Fixtures of the LangChain adapter tests (``langchain/``); the machinery is in ``lc_helpers``,
which the deepagents tests here use too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lc_helpers import Harness, harness


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked ``in_process("why")`` is about what only an in-process gate does (trusted
    context never crosses the wire): its ``client`` variant is not collected, rather than
    collected and skipped."""
    dropped = [item for item in items if item.get_closest_marker("in_process") is not None
               and getattr(item, "callspec", None) is not None
               and item.callspec.params.get("either") == "client"]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    made = harness(tmp_path)
    yield made
    for conn in made.agents:
        conn.close()
    made.gate.store.close()


@pytest.fixture(params=["gate", pytest.param("client", marks=pytest.mark.slow)])
def either(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """A harness whose middleware gate is an in-process ``Gate``, or a ``Client`` talking
    to a real ``signoff serve`` (a subprocess: slow); a module takes it as its ``h``."""
    made = harness(tmp_path, remote=request.param == "client")
    yield made
    for conn in made.agents:
        conn.close()
    if made.remote:
        made.gate.close()
    else:
        made.gate.store.close()
