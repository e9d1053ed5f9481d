"""What every model-backed reviewer does around its one model call.

Spend the budget, build the prompt, ask once, time it, and accept only a
strict verdict. Every failure — over budget, an exception, a late, empty,
refused or malformed answer — is an escalation with ``error`` set to a stable
code, never an approval: a human decides, and an unattended run is blocked.
Adapters (``chat_completions.py``, ``langchain_model.py``) only say how to ask.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from signoff.review.answer import MAX_ANSWER, InvalidAnswer, parse_answer
from signoff.review.base import ReviewOutcome, ReviewRequest
from signoff.review.budget import ReviewBudget
from signoff.review.prompt import build_messages, prompt_hash

# Stable ``ReviewOutcome.error`` codes (docs/review.md).
ERROR_CODES = ("review_invalid", "review_refused", "review_timeout", "review_http_429",
               "review_http_4xx", "review_http_5xx", "review_unreachable", "review_error",
               "review_budget")


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """One model answer, as an adapter read it."""

    text: str | None
    model: str | None = None
    tokens: Mapping[str, int] | None = None
    refusal: str | None = None
    finish_reason: str | None = None
    tool_calls: int = 0


def error_code(exc: BaseException) -> str:
    """A stable code for a failed model call, from the exception's status or kind."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status == 429:
            return "review_http_429"
        return "review_http_5xx" if status >= 500 else "review_http_4xx"
    names = [cls.__name__ for cls in type(exc).__mro__]
    if isinstance(exc, TimeoutError) or any("Timeout" in n for n in names):
        return "review_timeout"
    if any("Connect" in n for n in names):
        return "review_unreachable"
    return "review_error"


def judge(completion: Completion) -> tuple[bool, str]:
    """The verdict in a completion, or ``InvalidAnswer``."""
    if completion.refusal or completion.finish_reason == "content_filter":
        raise InvalidAnswer("the model refused to answer", code="review_refused")
    if completion.tool_calls:
        raise InvalidAnswer("the model asked to call a tool; the reviewer has none")
    if completion.finish_reason == "length":
        raise InvalidAnswer("the answer was cut off at the output token limit")
    answer = parse_answer(completion.text)
    return answer.approve, answer.reason


class ModelReviewer(ABC):
    """A reviewer that asks a model once per call; subclasses implement ``complete``."""

    name = "model"

    def __init__(self, *, model: str | None, budget: ReviewBudget | None = None,
                 deadline: float | None = None) -> None:
        self.model = model
        self.budget = budget
        self.deadline = deadline  # seconds; a later answer is discarded as late

    @abstractmethod
    def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion:
        """Send the messages, offering no tools, and return the answer."""

    def review(self, request: ReviewRequest) -> ReviewOutcome:
        if self.budget is not None:
            spent = self.budget.take(request.context.run_id)
            if spent is not None:
                return self._escalate("review_budget", f"{spent}: a human decides")
        messages = build_messages(request)
        digest = prompt_hash(messages)
        start = time.perf_counter()
        try:
            completion = self.complete(messages)
        except Exception as exc:  # any failure is doubt, and doubt goes to a human
            latency = (time.perf_counter() - start) * 1000
            code = error_code(exc)
            detail = str(exc)[:200] or type(exc).__name__
            return self._escalate(code, f"the review failed ({code}: {detail}): a human decides",
                                  prompt_hash=digest, latency_ms=latency)
        latency = (time.perf_counter() - start) * 1000
        raw = completion.text[:MAX_ANSWER] if completion.text is not None else None
        model = completion.model or self.model
        if self.deadline is not None and latency > self.deadline * 1000:
            return self._escalate("review_timeout",
                                  f"the answer came after {latency / 1000:.1f} s, past the "
                                  f"{self.deadline:g} s limit: a human decides",
                                  prompt_hash=digest, latency_ms=latency, answer=raw,
                                  tokens=completion.tokens, model=model)
        try:
            approve, reason = judge(completion)
        except InvalidAnswer as exc:
            return self._escalate(exc.code, f"no valid verdict ({exc}): a human decides",
                                  prompt_hash=digest, latency_ms=latency, answer=raw,
                                  tokens=completion.tokens, model=model)
        return ReviewOutcome(approve=approve, reason=reason, reviewer=self.name, model=model,
                             prompt_hash=digest, answer=raw, latency_ms=latency,
                             tokens=completion.tokens)

    def _escalate(self, code: str, reason: str, *, prompt_hash: str | None = None,
                  latency_ms: float | None = None, answer: str | None = None,
                  tokens: Mapping[str, int] | None = None,
                  model: str | None = None) -> ReviewOutcome:
        return ReviewOutcome(approve=False, reason=reason, reviewer=self.name,
                             model=model or self.model, prompt_hash=prompt_hash, answer=answer,
                             latency_ms=latency_ms, tokens=tokens, error=code)
