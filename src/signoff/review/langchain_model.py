"""``ChatModelReviewer``: any LangChain chat model as the auto reviewer.

The model is invoked as it is given, never through ``bind_tools``; a model
that already has tools bound is a ``RunnableBinding``, not a chat model, and is
refused. The call runs with no callbacks of the surrounding run, so the
reviewer's tokens never stream into the agent's output. The call runs on the
review pool and is waited for ``timeout`` seconds in all; LangChain has no
common way to cancel it, so a late call runs on (holding its slot) until the
model's own timeout ends it, and its answer is discarded. A reply carrying
tool calls (``tool_calls``, ``invalid_tool_calls``, a ``function_call`` or
``tool_calls`` in ``additional_kwargs``) or a non-text content block is not a
verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from signoff.errors import ConfigurationError
from signoff.review.budget import ReviewBudget
from signoff.review.llm import Completion, ModelReviewer
from signoff.review.pool import ReviewPool

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and not _other_blocks(content):  # text blocks only
        return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)
    return None


def _other_blocks(content: list[Any]) -> bool:
    return any(not isinstance(b, str) and not (isinstance(b, dict) and b.get("type") == "text"
                                               and isinstance(b.get("text", ""), str))
               for b in content)


def _not_text(reply: Any) -> str | None:
    """Why a LangChain reply is not plain text, or None."""
    if getattr(reply, "tool_calls", None):
        return "tool_calls"
    if getattr(reply, "invalid_tool_calls", None):
        return "invalid_tool_calls"
    extra = getattr(reply, "additional_kwargs", None) or {}
    for key in ("function_call", "tool_calls"):
        if extra.get(key) is not None:
            return f"a {key} in additional_kwargs"
    content = reply.content
    if isinstance(content, list) and _other_blocks(content):
        return "a content block that is not text"
    if not isinstance(content, (str, list)):
        return "content that is not text"
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
                 budget: ReviewBudget | None = None, pool: ReviewPool | None = None) -> None:
        from langchain_core.language_models import BaseChatModel  # noqa: PLC0415 (optional)

        if not isinstance(model, BaseChatModel):
            raise ConfigurationError(
                "ChatModelReviewer needs the chat model itself (a BaseChatModel); a model "
                "with tools bound is not tool-free", code="review_not_tool_free")
        super().__init__(model=_model_name(model), budget=budget, deadline=timeout,
                         pool=pool)
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
        finish = meta.get("finish_reason") or meta.get("stop_reason")
        return Completion(text=_text(reply.content),
                          model=model if isinstance(model, str) else None, tokens=tokens,
                          refusal=None if refusal is None else str(refusal) or "refused",
                          finish_reason=finish if isinstance(finish, str) else None,
                          tool_calls=len(getattr(reply, "tool_calls", None) or ()),
                          not_text=_not_text(reply))
