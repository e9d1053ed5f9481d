"""The reviewer ``[review]`` asks for: built once, when the policy is.

Problems surface when the policy loads, not on the first gated call at night:
``reviewer = "openai"`` without the openai package is a ``ConfigurationError``
(``review_unavailable``), and without its key in the environment too
(``review_no_key``). The key is read from the environment only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from signoff.errors import ConfigurationError
from signoff.policy.reviewing import ReviewConfig, Reviewer
from signoff.review.rules import RiskReviewer


def build_reviewer(config: ReviewConfig, environ: Mapping[str, str] | None = None) -> Reviewer:
    """The reviewer ``config`` names: ``RiskReviewer`` up to ``max_risk``, or a model."""
    if config.reviewer == "rules":
        return RiskReviewer(threshold=config.max_risk)
    if config.reviewer != "openai":
        raise ConfigurationError(f"unknown reviewer {config.reviewer!r}", code="invalid_setting")
    from signoff.review.budget import ReviewBudget  # noqa: PLC0415
    from signoff.review.chat_completions import (  # noqa: PLC0415 (needs openai only here)
        ChatCompletionsReviewer,
        openai_client,
    )
    from signoff.review.pool import ReviewPool  # noqa: PLC0415

    if config.model is None:
        raise ConfigurationError('[review] reviewer = "openai" needs a model',
                                 code="review_no_model")
    env = os.environ if environ is None else environ
    key = env.get(config.api_key_env)
    if not key:
        raise ConfigurationError(
            f'[review] reviewer = "openai" reads its API key from the environment variable '
            f"{config.api_key_env}, which is not set (for an endpoint that needs no key, "
            f"set it to any value)", code="review_no_key")
    client = openai_client(api_key=key, base_url=config.base_url, timeout=config.timeout,
                           max_retries=config.max_retries)
    return ChatCompletionsReviewer(
        config.model, client=client, max_output_tokens=config.max_output_tokens,
        json_mode=config.json_mode, token_limit_param=config.token_limit_param,
        temperature=config.temperature,
        budget=ReviewBudget(per_run=config.max_reviews_per_run,
                            per_minute=config.max_reviews_per_minute),
        timeout=config.timeout, pool=ReviewPool(config.max_concurrent))
