"""The shared behaviour suite's fixture: every adapter's driver (``bh_<framework>``), over
an in-process ``Gate`` and over a ``Client`` of a real ``signoff serve`` (a subprocess:
slow)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from bh_world import Driver, world

FRAMEWORKS = {  # fixture id → (module, driver class)
    "langchain": ("bh_langchain", "LangChainDriver"),
    "pydantic-ai": ("bh_pydantic_ai", "PydanticAIDriver"),
}


@pytest.fixture(params=[pytest.param((f, g), id=f"{f}-{g}",
                                     marks=[pytest.mark.slow] if g == "client" else [])
                        for f in FRAMEWORKS for g in ("gate", "client")])
def d(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Driver]:
    framework, gate = request.param
    module, name = FRAMEWORKS[framework]
    made = world(tmp_path, remote=gate == "client")
    driver: Driver = getattr(importlib.import_module(module), name)(made)
    yield driver
    made.close()
