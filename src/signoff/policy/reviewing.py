"""The port to an auto reviewer: what the policy asks, what it takes back, and the bound.

In ``auto`` mode a gated call may be answered by a reviewer on the human's behalf.
The policy owns the question (``ReviewRequest``), the answer (``ReviewOutcome``),
the ``Reviewer`` protocol, the ``[review]`` settings and the bound beyond which no
reviewer is asked; ``signoff.review`` implements reviewers against this port and
imports it, never the other way round. Which reviewer ``[review]`` names is built
by the builder handed to ``use_builder`` (the package root hands it
``signoff.review.build_reviewer``), so a policy loads with its reviewer built and
its problems shown at load, and evaluation calls out to nothing but the reviewer
it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from signoff.errors import ConfigurationError
from signoff.model import Reason, Risk, RunContext, ToolCall

REVIEWERS = ("rules", "openai")
TOKEN_LIMIT_PARAMS = ("max_tokens", "max_completion_tokens")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewConfig:
    """``[review]`` in ``signoff.toml``: which auto reviewer answers, and its limits. The API
    key is not a field: it is read from the environment variable ``api_key_env`` names."""

    reviewer: str = "rules"  # "rules" (RiskReviewer) or "openai" (ChatCompletionsReviewer)
    # The bound: a call above this risk, or with any concern, never reaches a reviewer.
    max_risk: Risk = Risk.MEDIUM
    model: str | None = None
    base_url: str | None = None  # any chat-completions endpoint; None: the client's default
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 10.0  # seconds for the whole review, retries included
    max_retries: int = 0  # a failed review goes to a human; retrying only delays that
    max_output_tokens: int = 300
    json_mode: bool = True  # send response_format {"type": "json_object"}
    token_limit_param: str = "max_tokens"  # noqa: S105 (a parameter name) or "max_completion_tokens" (newer OpenAI models)
    temperature: float | None = None  # None: not sent (some models refuse any value)
    max_reviews_per_run: int = 50
    # Who may set a thread to ``full`` besides admins (``kernel.mode_authority``); None:
    # admins only.
    full_mode_role: str | None = None
    max_reviews_per_minute: int = 60
    # Reviews at a time (ReviewPool); when all are taken a call goes to a human at once.
    max_concurrent: int = 8


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


def beyond_reviewer(request: ReviewRequest, max_risk: Risk) -> ReviewOutcome | None:
    """The bound: an escalation when the call is beyond every auto reviewer, else ``None``
    (ask it). A call above ``max_risk``, or carrying any concern the analysis found (code run
    it does not declare, the network, a sensitive write, ...), goes to a human and the
    reviewer is not asked at all — no model call, no cost, nothing an argument could talk
    it into."""
    if request.concerns:
        codes = ", ".join(dict.fromkeys(c.code or c.text for c in request.concerns))
        return ReviewOutcome(
            approve=False, reviewer="policy",
            reason=f"the call carries concerns ({codes}) no auto reviewer may approve: "
                   f"a human decides (the reviewer was not asked)")
    if request.risk.rank > max_risk.rank:
        return ReviewOutcome(
            approve=False, reviewer="policy",
            reason=f"risk {request.risk.value} is above the review bound (max_risk = "
                   f"{max_risk.value}): a human decides (the reviewer was not asked)")
    return None


Builder = Callable[[ReviewConfig], Reviewer]
_builder: list[Builder] = []


def use_builder(builder: Builder) -> None:
    """Name what builds the reviewer ``[review]`` asks for (the last one named wins)."""
    _builder[:] = [builder]


def configured_reviewer(config: ReviewConfig) -> Reviewer:
    """The reviewer ``config`` names, built by the builder handed to ``use_builder``."""
    if not _builder:
        raise ConfigurationError("no reviewer builder is set (import signoff first)",
                                 code="review_unavailable")
    return _builder[0](config)
