"""The pauses a session holds: ADK's ``adk_request_confirmation`` calls that carry a signoff
request, read back from the session's events (what the session service stored), and the
user message that resumes them all.

ADK persists the confirmation call with the ``ToolConfirmation`` it was raised with; signoff's
payload (``PAYLOAD_KEY``) names the request, so a new process with a new ``Runner`` finds
what its session waits on without any memory of the old one. A pause is *outstanding* until
a response to its original call that is not the placeholder (``replies.PENDING_KEY``) is in
the session: the resume ran it, or said why not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.events.event import Event
from google.adk.flows.llm_flows.functions import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
from google.genai import types

from signoff.adapters.google_adk.replies import PENDING_KEY

PAYLOAD_KEY = "signoff"  # in ToolConfirmation.payload: the request the pause stands for


@dataclass(frozen=True, slots=True)
class Pause:
    """One paused call: ADK's confirmation call id, the original call id, signoff's request."""

    confirmation_id: str
    call_id: str
    request_id: str


def _request_id(call: types.FunctionCall) -> tuple[str, str] | None:
    """(original call id, signoff request id) of a confirmation call signoff raised."""
    args = call.args or {}
    original = args.get("originalFunctionCall")
    confirmation = args.get("toolConfirmation")
    if not isinstance(original, dict) or not isinstance(confirmation, dict):
        return None
    payload = confirmation.get("payload")
    ours = payload.get(PAYLOAD_KEY) if isinstance(payload, dict) else None
    request_id = ours.get("request_id") if isinstance(ours, dict) else None
    call_id = original.get("id")
    if not isinstance(request_id, str) or not isinstance(call_id, str):
        return None
    return call_id, request_id


def pauses(events: Iterable[Event]) -> list[Pause]:
    """The session's outstanding signoff pauses, oldest first."""
    raised: list[Pause] = []
    answered: set[str] = set()
    for event in events:
        if event.author == "user":
            continue
        # ADK marks the confirmation calls it raises long-running; a model that writes a
        # call by that name itself gets no such mark, and its call is no pause.
        raised_here = event.long_running_tool_ids or set()
        for call in event.get_function_calls():
            if call.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME and call.id \
                    and call.id in raised_here:
                found = _request_id(call)
                if found is not None:
                    raised.append(Pause(call.id, *found))
        for response in event.get_function_responses():
            body = response.response or {}
            if response.id and PENDING_KEY not in body:
                answered.add(response.id)
    latest: dict[str, Pause] = {}
    for pause in raised:  # a call paused again keeps its latest confirmation
        latest[pause.call_id] = pause
    return [p for p in latest.values() if p.call_id not in answered]


def answered_in(content: types.Content | None) -> set[str]:
    """The confirmation call ids a user message answers."""
    if content is None or not content.parts:
        return set()
    return {p.function_response.id for p in content.parts
            if p.function_response is not None and p.function_response.id
            and p.function_response.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME}


def resume_message(session_or_events: Any) -> types.Content:
    """The user message that resumes every outstanding pause of a session (a ``Session`` or
    its events). It is only a wake-up: each call's decision is read from signoff's store,
    whatever ``confirmed`` says."""
    events: Sequence[Event] = getattr(session_or_events, "events", session_or_events)
    parts = [types.Part(function_response=types.FunctionResponse(
        id=p.confirmation_id, name=REQUEST_CONFIRMATION_FUNCTION_CALL_NAME,
        response={"confirmed": True})) for p in pauses(events)]
    return types.Content(role="user", parts=parts)
