"""Fixtures the shell analysis tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit import READERS, reader_policy, search_workspace, secrets_workspace
from signoff import Policy
from signoff.policy.starter import starter_toml


@pytest.fixture
def starter(tmp_path: Path) -> Policy:
    """The starter policy over an empty workspace (a module may define its own)."""
    return Policy.from_toml(starter_toml(str(tmp_path)))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with sources, notes and a ``.env`` (a module may define its own)."""
    return secrets_workspace(tmp_path / "ws")


@pytest.fixture
def readers(tmp_path: Path) -> Policy:
    """Find, ls, the search tools and readers admitted over a ``search_workspace``: no
    rule names a secret, so ``secret_read`` alone must judge."""
    return reader_policy(search_workspace(tmp_path / "ws"), READERS)
