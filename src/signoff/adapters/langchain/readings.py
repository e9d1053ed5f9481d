"""Small readings of what LangChain and LangGraph hand the middleware: a tool's name and
maker, the thread a call runs on, a call's name in its message, a tool message's result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest


def from_deepagents(tool: Any) -> bool:
    """A tool deepagents built (its function lives in a ``deepagents`` module)."""
    func = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    return str(getattr(func, "__module__", "")).startswith("deepagents.")


def tool_name(tool: Any) -> str | None:
    if isinstance(tool, Mapping):
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        return str(name) if name else None
    return getattr(tool, "name", None)


def thread_id_now() -> str | None:
    value = (get_config().get("configurable") or {}).get("thread_id")
    return str(value) if value else None


def call_name(message: AIMessage, call_id: str) -> str | None:
    return next((c["name"] for c in message.tool_calls if c.get("id") == call_id), None)


def thread_of(request: ToolCallRequest) -> str | None:
    config = getattr(request.runtime, "config", None) or {}
    value = (config.get("configurable") or {}).get("thread_id")
    return str(value) if value else None


def result_of(message: ToolMessage) -> Any:
    return message.content if isinstance(message.content, str) else list(message.content)
