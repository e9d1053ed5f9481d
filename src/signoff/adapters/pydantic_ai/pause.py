"""A paused run as the application stores it, and the wake-up that resumes it.

A run that asked ends with ``DeferredToolRequests``; each of signoff's calls carries its
request id in ``metadata[call id]["signoff"]``. The application stores the message history
and those requests (``Paused.dumps``: JSON, Pydantic AI's own ``ModelMessagesTypeAdapter``)
anywhere durable; a new process — new gate over the same store, new agent objects — loads
them and resumes once the humans decided (``signoff requests approve``, the inbox, the API).

The resume value is only a wake-up: ``wake`` answers each of signoff's calls with a plain
``ToolApproved()``, and ``SignoffToolset`` reads the real decision from the store when the
call comes back. A call whose request is still pending pauses again; a rejection reaches
the model as a failed tool return. Deferred calls that are not signoff's (an external tool,
a tool's own ``requires_approval``) are left for the application to answer.

``waiting_handler`` is for a run that may wait in place (a command-line app, a worker):
Pydantic AI's ``HandleDeferredToolCalls`` calls it with the run's deferred calls, it
waits on the gate for their decisions, and the run goes on without ending.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from signoff.adapters.pydantic_ai.toolset import METADATA_KEY
from signoff.errors import ConfigurationError, InvalidInput
from signoff.extras import absent
from signoff.kernel.outcomes import OutcomeKind
from signoff.kernel.protocol import GateProtocol

try:
    import anyio.to_thread
    from pydantic import TypeAdapter
    from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
    from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved
except ImportError as exc:
    raise absent("pydantic-ai", __name__, exc) from exc

_REQUESTS = TypeAdapter(DeferredToolRequests)


def request_ids(requests: DeferredToolRequests) -> dict[str, str]:
    """Tool call id → signoff request id, for the calls signoff paused on."""
    found: dict[str, str] = {}
    for call in requests.approvals:
        entry = requests.metadata.get(call.tool_call_id) or {}
        ours = entry.get(METADATA_KEY) if isinstance(entry, Mapping) else None
        if isinstance(ours, Mapping) and isinstance(ours.get("request_id"), str):
            found[call.tool_call_id] = ours["request_id"]
    return found


def wake(requests: DeferredToolRequests) -> DeferredToolResults:
    """``deferred_tool_results`` that wake every call signoff paused on (the decisions
    themselves are read from the store when each call comes back)."""
    return DeferredToolResults(approvals={call_id: ToolApproved()
                                          for call_id in request_ids(requests)})


def undecided(gate: GateProtocol, requests: DeferredToolRequests) -> list[str]:
    """The request ids still waiting for a human (resuming now would pause again)."""
    return [rid for rid in request_ids(requests).values()
            if gate.outcome(rid).kind is OutcomeKind.PENDING]


@dataclass(frozen=True, slots=True)
class Paused:
    """What a paused run needs to go on: its message history and its deferred requests."""

    messages: list[ModelMessage]
    requests: DeferredToolRequests

    @classmethod
    def of(cls, result: Any) -> Paused:
        """From an ``AgentRunResult`` whose output is ``DeferredToolRequests``."""
        if not isinstance(getattr(result, "output", None), DeferredToolRequests):
            raise InvalidInput("the run did not pause: its output is not DeferredToolRequests",
                               code="not_paused", field="output")
        return cls(list(result.all_messages()), result.output)

    def dumps(self) -> str:
        return json.dumps({
            "messages": ModelMessagesTypeAdapter.dump_python(self.messages, mode="json"),
            "requests": _REQUESTS.dump_python(self.requests, mode="json")})

    @classmethod
    def loads(cls, text: str | bytes) -> Paused:
        """A stored paused run; one that does not read is ``InvalidInput(invalid_pause)``,
        never a run resumed on part of its history."""
        try:
            data = json.loads(text)
            return cls(ModelMessagesTypeAdapter.validate_python(data["messages"]),
                       _REQUESTS.validate_python(data["requests"]))
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidInput(f"the stored paused run does not read: {exc}",
                               code="invalid_pause") from None

    def resume_kwargs(self) -> dict[str, Any]:
        """``agent.run(**paused.resume_kwargs())``: the history and the wake-up."""
        return {"message_history": self.messages, "deferred_tool_results": wake(self.requests)}


def waiting_handler(gate: GateProtocol, *, wait_seconds: float = 300.0) -> Callable[
        [Any, DeferredToolRequests], Awaitable[DeferredToolResults | None]]:
    """A handler for Pydantic AI's ``HandleDeferredToolCalls``: the run waits in place for
    up to ``wait_seconds`` for the humans to decide signoff's calls, then goes on (each
    call reading its decision from the store); a call still undecided then ends the run
    with ``DeferredToolRequests``, as without the handler. Calls that are not signoff's
    are left to the next handler."""
    if not 0 < wait_seconds <= 86400:
        raise ConfigurationError("wait_seconds must be between 0 and 86400 seconds",
                                 code="invalid_wait")

    async def handler(ctx: Any, requests: DeferredToolRequests) -> DeferredToolResults | None:
        ids = request_ids(requests)
        if not ids:
            return None
        end = time.monotonic() + wait_seconds
        for request_id in ids.values():
            left = max(0.0, end - time.monotonic())
            outcome = await anyio.to_thread.run_sync(
                functools.partial(gate.wait, request_id, timeout=left))
            if outcome.kind is OutcomeKind.PENDING:
                return None  # undecided: the run ends paused, as without the handler
        return wake(requests)

    return handler
