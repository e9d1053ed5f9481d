"""``ChatModelReviewer``: any LangChain chat model as the auto reviewer.

The model is invoked as it is given, never through ``bind_tools``; a model
that already has tools bound is a ``RunnableBinding``, not a chat model, and is
refused. The call runs with no callbacks of the surrounding run, so the
reviewer's tokens never stream into the agent's output. LangChain has no
common timeout: the model's own bounds the wait, and an answer that arrives
after ``timeout`` seconds is discarded as late.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from signoff.errors import ConfigurationError
from signoff.review.budget import ReviewBudget
from signoff.review.llm import Completion, ModelReviewer

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: keep the text ones
        parts = [b if isinstance(b, str) else b.get("text", "") for b in content
                 if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")]
        return "".join(parts)
    return None


def _model_name(model: Any) -> str | None:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


class ChatModelReviewer(ModelReviewer):
    """Reviews a call with one ``invoke`` of a LangChain chat model, offering no tools."""

    name = "langchain"

    def __init__(self, model: BaseChatModel, *, timeout: float | None = 30.0,
                 budget: ReviewBudget | None = None) -> None:
        from langchain_core.language_models import BaseChatModel  # noqa: PLC0415 (optional)

        if not isinstance(model, BaseChatModel):
            raise ConfigurationError(
                "ChatModelReviewer needs the chat model itself (a BaseChatModel); a model "
                "with tools bound is not tool-free", code="review_not_tool_free")
        super().__init__(model=_model_name(model), budget=budget, deadline=timeout)
        self.chat_model = model

    def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion:
        from langchain_core.messages import (  # noqa: PLC0415 (optional)
            BaseMessage,
            HumanMessage,
            SystemMessage,
        )

        kinds = {"system": SystemMessage, "user": HumanMessage}
        lc_messages: list[BaseMessage] = [kinds[m["role"]](content=m["content"])
                                          for m in messages]
        reply = self.chat_model.invoke(
            lc_messages, config={"callbacks": [], "tags": ["signoff:reviewer"]})
        usage = getattr(reply, "usage_metadata", None)
        tokens = ({"prompt": int(usage["input_tokens"]),
                   "completion": int(usage["output_tokens"])} if usage else None)
        meta = reply.response_metadata or {}
        model = meta.get("model_name") or meta.get("model")
        refusal = reply.additional_kwargs.get("refusal")
        return Completion(text=_text(reply.content),
                          model=model if isinstance(model, str) else None, tokens=tokens,
                          refusal=refusal if isinstance(refusal, str) else None,
                          finish_reason=meta.get("finish_reason"),
                          tool_calls=len(getattr(reply, "tool_calls", None) or ()))
