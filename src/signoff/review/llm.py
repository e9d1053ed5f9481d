"""What every model-backed reviewer does around its one model call.

Take a slot of the review pool, spend the budget, build the prompt, ask once
on the pool's thread, wait at most the deadline, and accept only a strict
verdict in plain text. Every failure — no free slot, over budget, an exception,
a late, empty, refused, tool-shaped or malformed answer — is an escalation with
``error`` set to a stable code, never an approval: a human decides, and an
unattended run is blocked. An answer that comes after the deadline is never
read. Adapters (``chat_completions.py``, ``langchain_model.py``) only say how
to ask, and what shape the answer came in.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from signoff.policy.reviewing import ReviewOutcome, ReviewRequest
from signoff.review.answer import MAX_ANSWER, InvalidAnswer, parse_answer
from signoff.review.budget import ReviewBudget
from signoff.review.pool import ReviewPool
from signoff.review.prompt import build_messages, prompt_hash

# Stable ``ReviewOutcome.error`` codes (docs/review.md).
ERROR_CODES = ("review_invalid", "review_refused", "review_timeout", "review_http_429",
               "review_http_4xx", "review_http_5xx", "review_unreachable", "review_error",
               "review_budget", "review_busy")
# How a model may ask to act instead of answering: none of these is a verdict.
TOOL_FINISH_REASONS = frozenset({"tool_calls", "function_call", "tool_use"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """One model answer, as an adapter read it."""

    text: str | None
    model: str | None = None
    tokens: Mapping[str, int] | None = None
    refusal: str | None = None
    finish_reason: str | None = None
    tool_calls: int = 0
    # Why the answer is not plain assistant text, as the adapter saw it (a legacy
    # ``function_call``, a ``tool_calls`` list, content parts, ...); None: plain text.
    not_text: str | None = None


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
    if completion.tool_calls or completion.finish_reason in TOOL_FINISH_REASONS:
        raise InvalidAnswer("the model asked to call a tool; the reviewer has none")
    if completion.not_text is not None:
        raise InvalidAnswer(f"the answer is not plain text ({completion.not_text})")
    if not isinstance(completion.text, str) and completion.text is not None:
        raise InvalidAnswer("the answer is not plain text")
    if completion.finish_reason == "length":
        raise InvalidAnswer("the answer was cut off at the output token limit")
    answer = parse_answer(completion.text)
    return answer.approve, answer.reason


class ModelReviewer(ABC):
    """A reviewer that asks a model once per call; subclasses implement ``complete``."""

    name = "model"

    def __init__(self, *, model: str | None, budget: ReviewBudget | None = None,
                 deadline: float | None = None, pool: ReviewPool | None = None) -> None:
        self.model = model
        self.budget = budget
        self.deadline = deadline  # seconds for the whole review; a later answer is discarded
        self.pool = pool if pool is not None else ReviewPool()

    @abstractmethod
    def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion:
        """Send the messages, offering no tools, and return the answer. Runs on a thread
        of the pool; its caller stops waiting after ``deadline`` seconds."""

    def review(self, request: ReviewRequest) -> ReviewOutcome:
        messages = build_messages(request)  # before a slot is taken: nothing to give back
        digest = prompt_hash(messages)
        if not self.pool.acquire():
            return self._escalate("review_busy", f"all {self.pool.size} review slots are "
                                  f"taken: a human decides (the reviewer was not asked)")
        if self.budget is not None:
            spent = self.budget.take(request.context.run_id)
            if spent is not None:
                self.pool.release()
                return self._escalate("review_budget", f"{spent}: a human decides")
        start = time.perf_counter()
        future: Future[Completion] = self.pool.start(lambda: self.complete(messages))
        try:
            completion = future.result(timeout=self.deadline)
        except Exception as exc:  # any failure is doubt, and doubt goes to a human
            latency = (time.perf_counter() - start) * 1000
            if self.deadline is not None and latency >= self.deadline * 1000:
                # Not done in time (or hung up on at the deadline, just before the wait ended).
                return self._escalate("review_timeout",
                                      f"no answer within the {self.deadline:g} s deadline: a "
                                      f"human decides (a later answer is discarded)",
                                      prompt_hash=digest, latency_ms=latency)
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
