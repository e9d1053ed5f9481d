"""The application's side of a pause: which signoff requests a response waits on, and the
wake-up that resumes it once humans have decided.

A wake-up answers every pending approval request of the framework with ``approved=True``:
only so that the framework hands the calls back to the middleware. What runs is decided by
the store, never by this value — a request still undecided pauses again, a rejected one is
told to the model. A request the application answers with ``approved=False`` itself never
reaches the middleware (the framework answers the model that it was not approved); the
signoff request stays as it was until it expires or is cancelled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

from agent_framework import AgentResponse, AgentSession, Content, Message, SupportsAgentRun

from signoff.errors import Conflict
from signoff.kernel.protocol import GateProtocol

REQUEST_KEY = "signoff_request_id"  # in a request's additional_properties


def _approval_requests(source: AgentResponse | Iterable[Content]) -> list[Content]:
    items = source.user_input_requests if isinstance(source, AgentResponse) else list(source)
    return [c for c in items if c.type == "function_approval_request"]


def request_ids(source: AgentResponse | Iterable[Content]) -> list[str]:
    """The signoff request ids a paused response waits on (what an approver decides)."""
    return [str(c.additional_properties[REQUEST_KEY]) for c in _approval_requests(source)
            if c.additional_properties and c.additional_properties.get(REQUEST_KEY)]


def wake_up(source: AgentResponse | Iterable[Content]) -> Message:
    """The message that resumes a paused run: every approval request answered, as a
    wake-up only (the middleware reads each decision from the store). ``Conflict``
    (``nothing_to_resume``) for a response that is not paused on any."""
    answers = [c.to_function_approval_response(True) for c in _approval_requests(source)]
    if not answers:
        raise Conflict("nothing to resume: the response carries no approval request",
                       code="nothing_to_resume")
    return Message(role="user", contents=answers)


async def wait_and_resume(agent: SupportsAgentRun, gate: GateProtocol, paused: AgentResponse,
                          *, session: AgentSession | None = None, timeout: float = 300.0,
                          **run_options: Any) -> AgentResponse[Any]:
    """Wait (off the event loop) until every request ``paused`` waits on is decided or
    ``timeout`` seconds pass, then resume the run with ``wake_up``. A request still
    undecided pauses the run again: the response then carries it."""
    end = time.monotonic() + timeout
    for request_id in request_ids(paused):
        left = max(0.0, end - time.monotonic())
        await asyncio.to_thread(gate.wait, request_id, timeout=left)
    resumed: AgentResponse[Any] = await agent.run(wake_up(paused), session=session, **run_options)
    return resumed
