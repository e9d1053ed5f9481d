"""``@gate.tool``: a function wrapped so that every call of it goes through the gate.

The wrapper keeps the function's signature (sync or async) and proposes each call with
its arguments by keyword; when the call does not run it raises ``Denied``, ``Rejected``,
``Blocked``, ``Responded`` or ``StillPending`` carrying the ``Outcome``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from signoff.kernel.outcomes import (
    Blocked,
    Denied,
    Outcome,
    OutcomeKind,
    Rejected,
    Responded,
    StillPending,
)
from signoff.kernel.tools import Precondition, ToolEntry, Verify
from signoff.model import RunContext, ToolCall

Run = Callable[..., Outcome]
ARun = Callable[..., Awaitable[Outcome]]


def registered(tools: dict[str, ToolEntry], target: Callable[..., Any], *, run: Run,
               arun: ARun, name: str | None, schema: Mapping[str, Any] | None,
               preconditions: Mapping[str, Precondition] | None, verify: Verify | None,
               summary: Callable[[Mapping[str, Any]], str] | None,
               expected_effect: str | Callable[[Mapping[str, Any]], str] | None,
               context: Callable[[], RunContext] | None, timeout: float) -> Callable[..., Any]:
    """``Gate.tool``: ``target`` entered in ``tools`` under ``name`` (its own by default),
    and wrapped."""
    entry = ToolEntry.build(name or target.__name__, target, schema=schema,
                            preconditions=dict(preconditions or {}), verify=verify,
                            summary=summary, expected_effect=expected_effect)
    tools[entry.name] = entry
    return wrap(target, entry, run=run, arun=arun, context=context, timeout=timeout)


def wrap(target: Callable[..., Any], entry: ToolEntry, *, run: Run, arun: ARun,
         context: Callable[[], RunContext] | None, timeout: float) -> Callable[..., Any]:
    """``target`` as a function whose calls are proposed, waited for and run by the gate
    (``run``, or ``arun`` for an async tool)."""
    signature = inspect.signature(target)
    tool_name = entry.name

    def to_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToolCall:
        import uuid  # noqa: PLC0415 (a wrapped tool's call; uuid imports platform)

        bound = signature.bind(*args, **kwargs)
        call_args = {k: v for k, v in bound.arguments.items()
                     if k != "idempotency_key"}
        return ToolCall(id="call_" + uuid.uuid4().hex, name=tool_name, args=call_args)

    if entry.is_async:
        @functools.wraps(target)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            ctx = context() if context else None
            return unwrap(await arun(to_call(args, kwargs), ctx, timeout=timeout))

        return async_wrapper

    @functools.wraps(target)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = context() if context else None
        return unwrap(run(to_call(args, kwargs), ctx, timeout=timeout))

    return wrapper


def unwrap(outcome: Outcome) -> Any:
    """An outcome's result, or the exception that says why the call did not run."""
    kind = outcome.kind
    if kind is OutcomeKind.EXECUTED:
        return outcome.result
    if kind is OutcomeKind.FAILED:
        raise RuntimeError(outcome.error or "the tool failed")
    if kind is OutcomeKind.REJECTED:
        raise Rejected(outcome)
    if kind is OutcomeKind.RESPONDED:
        raise Responded(outcome)
    if kind is OutcomeKind.BLOCKED:
        raise Blocked(outcome)
    if kind is OutcomeKind.PENDING:
        raise StillPending(outcome)
    raise Denied(outcome)
