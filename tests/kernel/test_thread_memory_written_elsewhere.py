"""A thread's mode, rejections and grants written by another process count for a proposal
here: a proposal on PostgreSQL takes a thread's memory it does not remember for empty,
unread, and that shortcut must never give another answer.

The request is then written only if the thread truly has no stored mode, no remembered
rejection and no grant of its own (one statement: ``Tx.expect_no_thread_memory``); if it
has, nothing is written and the proposal is made again on the memory it reads. Each case
writes the memory through a second store on the same database — another process — so
that the proposing one does not remember it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kit import KERNEL_POLICY, round_trips, twin_store
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import ProposalKind
from signoff.model import Decision, Grant, GrantScope, ReviewMode, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store

CALL = ToolCall(id="c-1", name="execute", args={"command": "make build"})


@pytest.fixture
def gates(postgres_store: Store, workspace: Path) -> Iterator[tuple[Gate, Gate]]:
    """The proposing gate, and another process's gate on the same database."""
    policy = Policy.from_toml(KERNEL_POLICY.format(root=workspace), source="kernel.toml")
    other_store = twin_store(postgres_store)
    try:
        here, there = Gate(policy, postgres_store), Gate(policy, other_store)
        for gate in (here, there):
            @gate.tool(name="execute")
            def execute(command: str) -> str:
                return f"ran {command}"
        yield here, there
    finally:
        other_store.close()


def created(store: Store, thread_id: str) -> list[str]:
    """The ids of the requests stored on the thread."""
    return [r.id for r in store.list_requests(thread_id=thread_id)]


def test_a_new_thread_is_one_round_trip(gates: tuple[Gate, Gate]) -> None:
    here, _ = gates
    here.propose(ToolCall(id="warm", name="execute", args={"command": "make x"}),
                 RunContext(thread_id="t-warm"))  # opens the pool's connection
    with round_trips() as counted:
        proposal = here.propose(CALL, RunContext(thread_id="t-new"))
    assert proposal.kind is ProposalKind.PENDING and proposal.request is not None
    assert counted[0] == 1
    assert here.store.thread_memory("t-new").mode is None


def test_a_grant_made_elsewhere_is_used(gates: tuple[Gate, Gate]) -> None:
    here, there = gates
    approver, _ = there.add_user("alice", roles=["ops"])
    first = there.propose(CALL, RunContext(thread_id="t-g"))
    assert first.request is not None
    there.decide(first.request.id, Decision.approve(scope="thread"), identity=approver)
    again = here.propose(ToolCall(id="c-2", name="execute", args={"command": "make build"}),
                         RunContext(thread_id="t-g"))
    assert again.kind is ProposalKind.ALLOWED and again.verdict.grant_id
    assert len(created(here.store, "t-g")) == 1  # the first one only: nothing half-written
    assert here.store.pending_on_thread("t-g") == []


def test_a_rejection_made_elsewhere_is_remembered(gates: tuple[Gate, Gate]) -> None:
    here, there = gates
    approver, _ = there.add_user("alice", roles=["ops"])
    first = there.propose(CALL, RunContext(thread_id="t-r"))
    assert first.request is not None
    there.decide(first.request.id, Decision.reject("no"), identity=approver)
    again = here.propose(ToolCall(id="c-2", name="execute", args={"command": "make build"}),
                         RunContext(thread_id="t-r"))
    assert (again.kind, again.verdict.code) == (ProposalKind.DENIED, "rejected_before")
    assert len(created(here.store, "t-r")) == 1


def test_a_mode_stored_elsewhere_is_read(gates: tuple[Gate, Gate]) -> None:
    """The stored mode here is the default one, so the verdict is the same either way: what
    shows that it was read is the cost — the attempt refused, the read, the write."""
    here, there = gates
    here.propose(ToolCall(id="warm", name="execute", args={"command": "make x"}),
                 RunContext(thread_id="t-warm"))
    there.set_thread_mode("t-m", ReviewMode.MANUAL)
    with round_trips() as counted:
        proposal = here.propose(CALL, RunContext(thread_id="t-m"))
    assert proposal.kind is ProposalKind.PENDING
    assert counted[0] == 3
    assert here.store.remembered_thread_memory("t-m") is not None
    assert len(created(here.store, "t-m")) == 1


def test_a_session_grant_made_elsewhere_is_used_on_a_new_thread(
        gates: tuple[Gate, Gate]) -> None:
    """A session's grants are not the thread's memory: they are read, not assumed."""
    here, there = gates
    with there.store.transaction() as tx:
        tx.insert_grant(Grant(id="g-session", scope=GrantScope.SESSION, tool="execute",
                              args={"command": "make build"}, session_id="s-1"),
                        at=1.0, request_id=None)
    proposal = here.propose(CALL, RunContext(thread_id="t-s", session_id="s-1"))
    assert proposal.kind is ProposalKind.ALLOWED and proposal.verdict.grant_id == "g-session"
    assert created(here.store, "t-s") == []


def test_a_thread_granted_after_an_unread_proposal_is_not_assumed_empty_again(
        gates: tuple[Gate, Gate]) -> None:
    """The first proposal wrote a request on memory taken for empty; a grant made then
    by another process still counts for the next call."""
    here, there = gates
    approver, _ = there.add_user("alice", roles=["ops"])
    first = here.propose(CALL, RunContext(thread_id="t-later"))
    assert first.kind is ProposalKind.PENDING and first.request is not None
    there.decide(first.request.id, Decision.approve(scope="thread"), identity=approver)
    again = here.propose(ToolCall(id="c-2", name="execute", args={"command": "make build"}),
                         RunContext(thread_id="t-later"))
    assert again.kind is ProposalKind.ALLOWED and again.verdict.grant_id
