"""``ChatCompletionsReviewer``: any endpoint speaking OpenAI's chat-completions protocol.

Through the ``openai`` package (the ``review`` extra), so OpenAI, Azure OpenAI
(its ``/openai/v1/`` endpoint), vLLM, Ollama and LiteLLM all work by
``base_url``. The request carries the two messages and nothing else a model
could act on: no ``tools``, no ``functions``; only an answer in plain assistant
text counts (a ``function_call``, ``tool_calls``, a ``tool_calls`` finish or
content parts are not a verdict). ``timeout`` is the whole review's deadline,
retries included: the client built here hangs up when it passes
(``signoff.review.hangup``). ``openai`` is imported only when a reviewer is
built, so signoff works without it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from signoff.errors import ConfigurationError
from signoff.policy.reviewing import TOKEN_LIMIT_PARAMS
from signoff.review.budget import ReviewBudget
from signoff.review.hangup import Hangup, attach
from signoff.review.llm import Completion, ModelReviewer
from signoff.review.pool import ReviewPool

if TYPE_CHECKING:
    from openai import OpenAI


def openai_client(*, api_key: str | None, base_url: str | None, timeout: float,
                  max_retries: int) -> OpenAI:
    """An ``openai.OpenAI`` client, or a ``ConfigurationError`` saying what is missing.
    Each request opens its own connection (none is kept alive), so a review past its
    deadline can be hung up on without touching another's."""
    try:
        import openai  # noqa: PLC0415 (optional: the review extra)
    except ImportError:
        raise ConfigurationError(
            "the openai reviewer needs the openai package: pip install 'signoff[review]'",
            code="review_unavailable") from None
    try:
        http_client = openai.DefaultHttpxClient(
            timeout=timeout, limits=_limits_class(openai)(max_keepalive_connections=0),
            event_hooks={"request": [attach]})
        return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout,
                             max_retries=max_retries, http_client=http_client)
    except openai.OpenAIError as exc:  # no api_key given and none in OPENAI_API_KEY
        raise ConfigurationError(f"the openai reviewer has no API key: {exc}",
                                 code="review_no_key") from None


def _limits_class(openai: Any) -> Any:
    """``Limits`` of the HTTP package this openai is built on (httpx, or its fork httpx2)."""
    package = openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0]
    return importlib.import_module(package).Limits


class ChatCompletionsReviewer(ModelReviewer):
    """Reviews a call with one chat completion; never offers the model a tool."""

    name = "openai"

    def __init__(self, model: str, *, client: OpenAI | None = None, base_url: str | None = None,
                 api_key: str | None = None, timeout: float = 10.0, max_retries: int = 0,
                 max_output_tokens: int = 300, json_mode: bool = True,
                 token_limit_param: str = "max_tokens",  # noqa: S107
                 temperature: float | None = None,
                 budget: ReviewBudget | None = None, pool: ReviewPool | None = None) -> None:
        if token_limit_param not in TOKEN_LIMIT_PARAMS:
            raise ConfigurationError(f"token_limit_param must be one of "
                                     f"{', '.join(TOKEN_LIMIT_PARAMS)}", code="invalid_setting")
        super().__init__(model=model, budget=budget, deadline=timeout, pool=pool)
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
        with Hangup(self.deadline) if self.deadline else nullcontext():
            response = create(**self.request_body(messages))
        usage = response.usage
        tokens = ({"prompt": int(usage.prompt_tokens), "completion": int(usage.completion_tokens)}
                  if usage is not None else None)
        if not response.choices:
            return Completion(text=None, model=response.model, tokens=tokens)
        choice = response.choices[0]
        message = choice.message
        content = message.content
        refusal = getattr(message, "refusal", None)
        return Completion(text=content if isinstance(content, str) else None,
                          model=response.model or self.model, tokens=tokens,
                          refusal=refusal if refusal is None else str(refusal) or "refused",
                          finish_reason=choice.finish_reason,
                          tool_calls=len(message.tool_calls or ()),
                          not_text=_not_text(message))


def _not_text(message: Any) -> str | None:
    """Why a chat-completions message is not plain assistant text, or None."""
    if getattr(message, "function_call", None) is not None:
        return "a function_call"
    if getattr(message, "tool_calls", None) is not None:
        return "a tool_calls field"
    content = message.content
    if content is not None and not isinstance(content, str):
        return "content parts"
    role = getattr(message, "role", "assistant")
    if role != "assistant":
        return f"a message from {role!r}"
    return None

