"""The reviewer protocol and the records it exchanges."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from signoff.model import Reason, Risk, RunContext, ToolCall


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewRequest:
    call: ToolCall
    args: Mapping[str, Any]
    context: RunContext
    risk: Risk
    reasons: tuple[Reason, ...]
    # The concerns among the reasons (signoff.policy.concerns: hidden_exec, inline_code,
    # network, sensitive_write, ...): what the call does beyond what its rules say.
    concerns: tuple[Reason, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewOutcome:
    approve: bool
    reason: str


@runtime_checkable
class Reviewer(Protocol):
    def review(self, request: ReviewRequest) -> ReviewOutcome: ...
