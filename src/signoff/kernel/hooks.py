"""Observation points in the gate's acts, for tests that kill a process at an exact step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Hooks:
    """Observation points, for tests that kill a process at an exact step."""

    after_insert: Callable[[str], None] | None = None
    after_decision: Callable[[str], None] | None = None
    after_claim: Callable[[str], None] | None = None
    before_result: Callable[[str], None] | None = None
