"""``ChatCompletionsReviewer``: any endpoint speaking OpenAI's chat-completions protocol.

Through the ``openai`` package (the ``review`` extra), so OpenAI, Azure OpenAI
(its ``/openai/v1/`` endpoint), vLLM, Ollama and LiteLLM all work by
``base_url``. The request carries the two messages and nothing else a model
could act on: no ``tools``, no ``functions``. ``openai`` is imported only when
a reviewer is built, so signoff works without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from signoff.errors import ConfigurationError
from signoff.review.budget import ReviewBudget
from signoff.review.config import TOKEN_LIMIT_PARAMS
from signoff.review.llm import Completion, ModelReviewer

if TYPE_CHECKING:
    from openai import OpenAI


def openai_client(*, api_key: str | None, base_url: str | None, timeout: float,
                  max_retries: int) -> OpenAI:
    """An ``openai.OpenAI`` client, or a ``ConfigurationError`` saying what is missing."""
    try:
        import openai  # noqa: PLC0415 (optional: the review extra)
    except ImportError:
        raise ConfigurationError(
            "the openai reviewer needs the openai package: pip install 'signoff[review]'",
            code="review_unavailable") from None
    try:
        return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout,
                             max_retries=max_retries)
    except openai.OpenAIError as exc:  # no api_key given and none in OPENAI_API_KEY
        raise ConfigurationError(f"the openai reviewer has no API key: {exc}",
                                 code="review_no_key") from None


class ChatCompletionsReviewer(ModelReviewer):
    """Reviews a call with one chat completion; never offers the model a tool."""

    name = "openai"

    def __init__(self, model: str, *, client: OpenAI | None = None, base_url: str | None = None,
                 api_key: str | None = None, timeout: float = 10.0, max_retries: int = 0,
                 max_output_tokens: int = 300, json_mode: bool = True,
                 token_limit_param: str = "max_tokens",  # noqa: S107
                 temperature: float | None = None,
                 budget: ReviewBudget | None = None) -> None:
        if token_limit_param not in TOKEN_LIMIT_PARAMS:
            raise ConfigurationError(f"token_limit_param must be one of "
                                     f"{', '.join(TOKEN_LIMIT_PARAMS)}", code="invalid_setting")
        super().__init__(model=model, budget=budget)
        self.client = client if client is not None else openai_client(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        self.max_output_tokens = max_output_tokens
        self.json_mode = json_mode
        self.token_limit_param = token_limit_param
        self.temperature = temperature

    def request_body(self, messages: Sequence[Mapping[str, str]]) -> dict[str, Any]:
        """The request's parameters: model, messages, limits. Never ``tools``."""
        body: dict[str, Any] = {"model": self.model, "messages": list(messages),
                                self.token_limit_param: self.max_output_tokens}
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion:
        create: Any = self.client.chat.completions.create
        response = create(**self.request_body(messages))
        usage = response.usage
        tokens = ({"prompt": int(usage.prompt_tokens), "completion": int(usage.completion_tokens)}
                  if usage is not None else None)
        if not response.choices:
            return Completion(text=None, model=response.model, tokens=tokens)
        choice = response.choices[0]
        message = choice.message
        return Completion(text=message.content, model=response.model or self.model,
                          tokens=tokens, refusal=getattr(message, "refusal", None),
                          finish_reason=choice.finish_reason,
                          tool_calls=len(message.tool_calls or ()))
