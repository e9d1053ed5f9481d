"""Auto reviewers: who answers a gated call in ``auto`` mode on the human's behalf.

A reviewer sees the call, the run's stated intent and what the policy found;
it has no tools and cannot act. It answers approve or escalate. Anything else
— an exception, a malformed answer — is treated as doubt and escalates to a
human: an auto reviewer can only ever *save* a human a click, never overrule one.
A call above ``[review] max_risk`` or carrying a concern never reaches one
(the bound, ``signoff.policy.reviewing``, which also holds the protocol a reviewer
implements). Model-backed reviewers (``ChatCompletionsReviewer``,
``ChatModelReviewer``) are described in docs/review.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from signoff.policy.reviewing import (
        ReviewConfig,
        Reviewer,
        ReviewOutcome,
        ReviewRequest,
        beyond_reviewer,
    )
    from signoff.review.answer import VERDICT_SCHEMA, InvalidAnswer, parse_answer
    from signoff.review.budget import ReviewBudget
    from signoff.review.chat_completions import ChatCompletionsReviewer
    from signoff.review.configured import build_reviewer
    from signoff.review.langchain_model import ChatModelReviewer
    from signoff.review.llm import ERROR_CODES, Completion, ModelReviewer
    from signoff.review.pool import ReviewPool
    from signoff.review.prompt import SYSTEM_PROMPT, build_messages, prompt_hash
    from signoff.review.rules import RiskReviewer

__all__ = ["ERROR_CODES", "SYSTEM_PROMPT", "VERDICT_SCHEMA", "ChatCompletionsReviewer",
           "ChatModelReviewer", "Completion", "InvalidAnswer", "ModelReviewer", "ReviewBudget",
           "ReviewConfig", "ReviewOutcome", "ReviewPool", "ReviewRequest", "Reviewer",
           "RiskReviewer",
           "beyond_reviewer", "build_messages", "build_reviewer", "parse_answer", "prompt_hash"]

# Each name, the module it is imported from on first use: a policy that builds the rules
# reviewer (every policy load) imports no model reviewer, prompt or HTTP client.
_HOMES = {
    "ReviewConfig": "signoff.policy.reviewing", "Reviewer": "signoff.policy.reviewing",
    "ReviewOutcome": "signoff.policy.reviewing", "ReviewRequest": "signoff.policy.reviewing",
    "beyond_reviewer": "signoff.policy.reviewing",
    "VERDICT_SCHEMA": "signoff.review.answer", "InvalidAnswer": "signoff.review.answer",
    "parse_answer": "signoff.review.answer", "ReviewBudget": "signoff.review.budget",
    "ChatCompletionsReviewer": "signoff.review.chat_completions",
    "build_reviewer": "signoff.review.configured",
    "ChatModelReviewer": "signoff.review.langchain_model",
    "ERROR_CODES": "signoff.review.llm", "Completion": "signoff.review.llm",
    "ModelReviewer": "signoff.review.llm", "ReviewPool": "signoff.review.pool",
    "SYSTEM_PROMPT": "signoff.review.prompt", "build_messages": "signoff.review.prompt",
    "prompt_hash": "signoff.review.prompt", "RiskReviewer": "signoff.review.rules",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'signoff.review' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
