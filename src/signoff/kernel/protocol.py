"""``GateProtocol``: the gate as an agent's adapter sees it, in-process or over HTTP.

Both ``signoff.Gate`` (this process's store) and ``signoff.remote.Client`` (a
``signoff serve`` elsewhere) implement it with the same signatures, return types and
typed errors, so an adapter written against it — the LangChain middleware — gates an
agent on either. It holds only what an agent's side needs: fix a run's review mode,
propose, read and wait for the outcome, claim the approved arguments, report the
result, withdraw a wait, and the reads a paused run is shown or resumed by. Deciding
is not here: an approver decides through its own identity (``Gate.decide``, the API).

``tests/kernel/test_protocol.py`` checks with mypy that both conform.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from signoff.kernel.execution import Execution
from signoff.kernel.outcomes import Outcome, Proposal
from signoff.model import ApprovalRequest, RunContext, ToolCall
from signoff.policy import Policy, PolicyConfig
from signoff.store.thread_memory import ThreadMemory


class GateProtocol(Protocol):
    """The propose / wait / claim / report / resume surface of a gate."""

    @property
    def policy(self) -> Policy:
        """The policy the gate judges by: what an adapter checks before proposing (the
        clarification tool, subagent tools, file backends, the review-mode ceiling)."""
        ...

    @property
    def config(self) -> PolicyConfig:
        """The policy's configuration (``policy.config``)."""
        ...

    def start_run(self, context: RunContext) -> RunContext:
        """Begin a run: ``thread_waiting`` while another run's request waits on its thread;
        the context comes back with its review mode fixed."""
        ...

    def context_for(self, context: RunContext | None) -> RunContext:
        """The context with the thread's review mode, when it has none of its own."""
        ...

    def propose(self, call: ToolCall, /, context: RunContext | None = None, *,
                evidence: Sequence[str] = ()) -> Proposal:
        """The verdict, and for an ask the durable request (found again for the same call).
        The call is passed by position (``Client.propose`` names it ``tool``)."""
        ...

    def propose_now(self, call: ToolCall, context: RunContext | None = None) -> Proposal | None:
        """``propose`` for a call answerable from memory alone (an allowed quick verdict on
        a thread already read), with the same verdict and audit event; else ``None`` and
        nothing done. An event loop calls it before sending ``propose`` to a worker thread:
        an allowed call then costs no thread hop."""
        ...

    def outcome(self, request_id: str) -> Outcome:
        """The request's outcome now (``PENDING`` while undecided)."""
        ...

    def wait(self, request_id: str, *, timeout: float = ...) -> Outcome:
        """Block until the request is decided or ``timeout`` seconds pass."""
        ...

    def claim(self, request_id: str) -> Execution | Outcome:
        """Re-validate an approved request and claim it: the ``Execution`` to run (exactly
        its arguments), or the ``Outcome`` that says why not."""
        ...

    def report(self, execution: Execution, *, result: Any = None,
               error: str | None = None) -> Outcome:
        """Record what the claimed run did; only the fencing token's holder may."""
        ...

    def cancel(self, request_id: str, *, actor: str | None, reason: str) -> Outcome:
        """Withdraw a request its asker no longer waits for."""
        ...

    def get_request(self, request_id: str) -> ApprovalRequest:
        """One request as stored now (``NotFound`` otherwise)."""
        ...

    def thread_memory(self, thread_id: str, *, fresh: bool = False) -> ThreadMemory:
        """What the thread remembers: its mode and the requests pending on it."""
        ...

    def pending_on_thread(self, thread_id: str) -> list[ApprovalRequest]:
        """The thread's pending requests."""
        ...

    def thread_requests(self, thread_id: str, *, limit: int = 500) -> list[ApprovalRequest]:
        """The thread's requests, newest first."""
        ...

    def on_close(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when the gate closes (a closed gate is no place to look)."""
        ...
