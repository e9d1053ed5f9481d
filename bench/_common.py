"""Helpers both benchmark scripts use (run them as ``python bench/NAME.py``)."""

from __future__ import annotations

import importlib.metadata


def version(dist: str) -> str:
    """The installed version of a distribution, or ``not installed``."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def expect(condition: bool, message: str) -> None:
    """Stop before timing anything when the setup does not measure what it claims to."""
    if not condition:
        raise SystemExit(f"benchmark setup is wrong: {message}")
