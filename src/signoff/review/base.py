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
    # The concerns among the reasons (signoff.shell.concerns: hidden_exec, inline_code,
    # network, sensitive_write, ...): what the call does beyond what its rules say.
    concerns: tuple[Reason, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewOutcome:
    """A reviewer's answer and what it cost. The record (``to_record``) is stored with the
    request and in the audit, and reused when the same call is proposed again (a resume):
    one call is reviewed once."""

    approve: bool
    reason: str
    reviewer: str = "rules"  # which reviewer answered: "rules", "openai", "langchain", ...
    model: str | None = None  # the model that answered, for a model-backed reviewer
    prompt_hash: str | None = None  # sha256 of the exact prompt sent
    answer: str | None = None  # the model's raw answer text (bounded)
    latency_ms: float | None = None
    tokens: Mapping[str, int] | None = None  # {"prompt": n, "completion": m} when reported
    error: str | None = None  # why the answer was not accepted (timeout, invalid, ...)

    def to_record(self) -> dict[str, Any]:
        return {"approve": self.approve, "reason": self.reason, "reviewer": self.reviewer,
                "model": self.model, "prompt_hash": self.prompt_hash, "answer": self.answer,
                "latency_ms": self.latency_ms,
                "tokens": dict(self.tokens) if self.tokens is not None else None,
                "error": self.error}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ReviewOutcome:
        tokens = record.get("tokens")
        return cls(approve=bool(record["approve"]), reason=str(record["reason"]),
                   reviewer=str(record.get("reviewer") or "rules"), model=record.get("model"),
                   prompt_hash=record.get("prompt_hash"), answer=record.get("answer"),
                   latency_ms=record.get("latency_ms"),
                   tokens=dict(tokens) if isinstance(tokens, Mapping) else None,
                   error=record.get("error"))


@runtime_checkable
class Reviewer(Protocol):
    def review(self, request: ReviewRequest) -> ReviewOutcome: ...
