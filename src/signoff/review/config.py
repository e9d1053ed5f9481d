"""``[review]`` in ``signoff.toml``: which auto reviewer answers, and its limits.

Kept apart from ``signoff.policy.config`` (which parses it) so that building a
reviewer needs nothing from the policy package. The API key is not a field: it
is read from the environment variable ``api_key_env`` names, never from a file.
"""

from __future__ import annotations

from dataclasses import dataclass

from signoff.model import Risk

REVIEWERS = ("rules", "openai")
TOKEN_LIMIT_PARAMS = ("max_tokens", "max_completion_tokens")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewConfig:
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
