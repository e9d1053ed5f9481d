"""After a crash: expire what is overdue, withdraw the live waits of dead workers, mark dead
runs ``unknown``, finish approved work.

A part of the gate, beside the executor (``Executor``). Nothing here ever runs a call a
second time: a run whose lease ran out is ``unknown`` until the tool's
``verify`` hook or a human settles it (``settle``).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

from signoff.kernel import lifecycle
from signoff.kernel.execution import Executor
from signoff.kernel.tools import ToolEntry
from signoff.model import ApprovalRequest, RequestStatus
from signoff.store.base import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveryReport:
    expired: int = 0
    unknown: int = 0
    settled: int = 0
    executed: int = 0
    left_approved: int = 0
    withdrawn: int = 0  # children's requests whose waiting worker died or restarted

    def to_dict(self) -> dict[str, int]:
        return {"expired": self.expired, "unknown": self.unknown, "settled": self.settled,
                "executed": self.executed, "left_approved": self.left_approved,
                "withdrawn": self.withdrawn}


def waiter_gone(waiter: str | None, me: str) -> bool:
    """Whether the worker ``host:pid:boot`` waiting on a child's request is gone: this host's
    process of that pid is dead, or it is this very pid under another boot (a restart that
    reused it, as pid 1 in a container does). Another host's worker is left to its own
    recovery or to the request's expiry."""
    if not waiter:
        return False
    try:
        host, pid_text, boot = waiter.rsplit(":", 2)
        my_host, my_pid, my_boot = me.rsplit(":", 2)
        pid = int(pid_text)
    except ValueError:
        return False
    if host != my_host or boot == my_boot:
        return False
    if pid == int(my_pid):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False


class _Boot:
    """This process's boot id: random, drawn again in a forked child."""

    value = os.urandom(6).hex()  # 12 random hex digits (``uuid`` would import ``platform``)

    @classmethod
    def reseed(cls) -> None:
        cls.value = os.urandom(6).hex()


os.register_at_fork(after_in_child=_Boot.reseed)


def worker_id() -> str:
    """``host:pid:boot``: names the worker waiting on a child's request."""
    return f"{socket.gethostname()}:{os.getpid()}:{_Boot.value}"


class Recoverer:
    """Recovery builds on the executor: it finishes approved work with its ``work()``."""

    def __init__(self, store: Store, executor: Executor, *, tools: dict[str, ToolEntry],
                 clock: Callable[[], float], worker_id: str) -> None:
        self.store = store
        self.executor = executor
        self.tools = tools  # the gate's registry, shared: a tool's ``verify`` hook
        self.clock = clock
        self.worker_id = worker_id  # this worker: the waits of others that died are withdrawn

    def recover(self, *, run_approved: bool = True) -> RecoveryReport:
        """After a crash: expire overdue pending requests, mark dead executions ``unknown``
        (then let ``verify`` settle them), and finish approved-but-unstarted work.

        Safe to run in several processes at once: each row is re-read under its lock
        before it moves, and a row another recoverer moved first is skipped.
        """
        now = self.clock()
        expired = unknown = settled = withdrawn = 0
        with self.store.transaction() as tx:
            candidates = [r.id for r in tx.requests_in(
                [RequestStatus.PENDING, RequestStatus.EXECUTING], 100_000)]
        for request_id in candidates:
            with self.store.transaction() as tx:
                request = tx.get_request(request_id, lock=True)
                if request is None:
                    continue
                if request.status is RequestStatus.PENDING:
                    if request.parent_call and waiter_gone(request.waiter, self.worker_id):
                        # A child's wait lives in its worker: gone with it, it
                        # must not block its thread until it expires.
                        lifecycle.transition(
                            tx, request, RequestStatus.CANCELLED, now=now, actor="recover",
                            outcome_code="worker_restarted",
                            outcome_reason="the worker waiting on this subagent's call died "
                                           "or restarted")
                        tx.notify(request.id)
                        withdrawn += 1
                    elif request.expires_at is not None and now >= request.expires_at:
                        lifecycle.transition(
                            tx, request, RequestStatus.EXPIRED, now=now, actor="recover",
                            outcome_code="expired")
                        expired += 1
                elif request.status is RequestStatus.EXECUTING and \
                        request.lease_until is not None and now >= request.lease_until:
                    lifecycle.transition(
                        tx, request, RequestStatus.UNKNOWN, now=now, actor="recover",
                        outcome_code="lease_expired",
                        outcome_reason="the run died or overran its lease mid-call")
                    unknown += 1
        with self.store.transaction() as tx:
            undecided = tx.requests_in([RequestStatus.UNKNOWN], 100_000)
        for request in undecided:
            if self._settle_by_verify(request):
                settled += 1
        executed = self.executor.work() if run_approved else 0
        with self.store.transaction() as tx:
            left = len(tx.requests_in([RequestStatus.APPROVED], 100_000))
        return RecoveryReport(expired=expired, unknown=unknown, settled=settled,
                              executed=executed, left_approved=left, withdrawn=withdrawn)

    def _settle_by_verify(self, request: ApprovalRequest) -> bool:
        entry = self.tools.get(request.tool)
        if entry is None or entry.verify is None:
            return False
        try:
            happened = entry.verify(json.loads(request.run_args), request.id)
        except Exception:  # a verify that fails settles nothing
            return False
        if happened is None:
            return False
        return self.settle(request.id, succeeded=bool(happened), actor="verify",
                           note="settled by the tool's verify hook")

    def settle(self, request_id: str, *, succeeded: bool, actor: str, note: str) -> bool:
        """Reconcile an ``unknown`` request (a human, or a verify hook, knows what happened)."""
        now = self.clock()
        with self.store.transaction() as tx:
            locked = tx.get_request(request_id, lock=True)
            if locked is None or locked.status is not RequestStatus.UNKNOWN:
                return False
            target = RequestStatus.SUCCEEDED if succeeded else RequestStatus.FAILED
            lifecycle.transition(
                tx, locked, target, now=now, actor=actor, outcome_code="reconciled",
                outcome_reason=note)
        return True
