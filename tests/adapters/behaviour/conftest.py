"""The shared behaviour suite's fixture: every adapter's driver (``bh_<framework>``), over
an in-process ``Gate`` and over a ``Client`` of a real ``signoff serve`` (a subprocess:
slow)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from bh_remote import SharedRemoteGate
from bh_world import POLICY, Driver, world

from signoff import Policy

FRAMEWORKS = {  # fixture id → (module, driver class)
    "langchain": ("bh_langchain", "LangChainDriver"),
    "openai-agents": ("bh_openai_agents", "OpenAIAgentsDriver"),
    "pydantic-ai": ("bh_pydantic_ai", "PydanticAIDriver"),
    "google-adk": ("bh_google_adk", "GoogleADKDriver"),
    "agent-framework": ("bh_agent_framework", "AgentFrameworkDriver"),
}


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedRemoteGate]:
    """One real ``signoff serve`` per test process (starting one takes seconds); each test
    runs on its own thread of it."""
    directory = tmp_path_factory.mktemp("served")
    made = SharedRemoteGate(POLICY, Policy.from_toml(POLICY, source="shared.toml"), directory)
    yield made
    made.close()


@pytest.fixture(params=[pytest.param((f, g), id=f"{f}-{g}",
                                     marks=[pytest.mark.slow] if g == "client" else [])
                        for f in FRAMEWORKS for g in ("gate", "client")])
def d(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Driver]:
    framework, gate = request.param
    module, name = FRAMEWORKS[framework]
    made = world(tmp_path, server=request.getfixturevalue("server") if gate == "client"
                 else None)
    driver: Driver = getattr(importlib.import_module(module), name)(made)
    yield driver
    made.close()
