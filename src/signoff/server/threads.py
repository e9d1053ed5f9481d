"""A thread's review mode: what it is, which modes the policy allows, and when it may change.

Shared by the API and the inbox. A mode above the policy's ceiling is refused;
so is any change while a call of the thread is executing (docs/kernel.md: a run's
mode is fixed while it runs; waiting for approval is not running).
"""

from __future__ import annotations

from typing import Any

from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.visibility import may_see
from signoff.model import RequestStatus, ReviewMode
from signoff.server.bodies import request_fields

MODE_ORDER = (ReviewMode.MANUAL, ReviewMode.AUTO, ReviewMode.FULL)


def thread_view(gate: Gate, thread_id: str, identity: Identity | None = None) -> dict[str, Any]:
    """The thread's mode and what waits on it; an agent's view lists only its own pending
    calls (``signoff.kernel.visibility``)."""
    config = gate.config
    memory = gate.thread_memory(thread_id, fresh=True)
    stored = memory.mode
    pending = gate.pending_on_thread(thread_id)
    if identity is not None:
        pending = [r for r in pending if may_see(identity, r)]
    mode = stored or config.default_review_mode.value
    # A mode its setter raised does not count for the setter's own calls (kernel.ownership):
    # say so, or the page would show "full" to a party whose calls are still reviewed.
    own_calls = None
    if (memory.mode_by and not config.self_service_modes
            and ReviewMode(mode).rank > config.default_review_mode.rank):
        own_calls = config.default_review_mode.value
    return {"thread_id": thread_id, "review_mode": mode, "set_by": memory.mode_by,
            "setter_calls_mode": own_calls,
            "stored": stored is not None, "ceiling": config.ceiling.value,
            "allowed_modes": [m.value for m in allowed_modes(gate)],
            "pending": [request_fields(r) for r in pending],
            "running": run_in_progress(gate, thread_id)}


def allowed_modes(gate: Gate) -> list[ReviewMode]:
    return list(MODE_ORDER[: MODE_ORDER.index(gate.config.ceiling) + 1])


def run_in_progress(gate: Gate, thread_id: str) -> bool:
    """A call of this thread is executing right now: its mode must not change under it."""
    return bool(gate.list_requests(status=RequestStatus.EXECUTING, thread_id=thread_id,
                                   limit=1))


def set_mode(gate: Gate, thread_id: str, mode: str, identity: Identity) -> dict[str, Any]:
    """Set by a person: the kernel refuses a mode above the ceiling (``above_ceiling``)
    and any change under an executing call (``run_in_progress``), in the transaction that
    writes it."""
    gate.set_thread_mode(thread_id, ReviewMode(mode), actor=identity.name)
    return thread_view(gate, thread_id, identity)

