"""Remembered thread memory (``signoff.store.recall``) on both backends: one read for a
thread's mode, rejections and grants; this process's commits seen at once, another
process's within the stated staleness; a stale grant never lets a call through."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff.gate import Gate
from signoff.model import Grant, GrantScope, Rejection, RunContext, ToolCall
from signoff.outcomes import ProposalKind
from signoff.policy import Policy
from signoff.store.base import Store
from signoff.store.sqlite import SqliteStore


def _twin(store: Store) -> Store:
    """A second store on the same database: what another process would see and do."""
    if isinstance(store, SqliteStore):
        return SqliteStore(store.path)
    return type(store)(store.dsn, schema=store.schema)  # type: ignore[attr-defined,call-arg]


@pytest.fixture
def twin(store: Store) -> Iterator[Store]:
    other = _twin(store)
    yield other
    other.close()


def _eventually(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "never became true"
        time.sleep(0.01)


def _grant(grant_id: str, scope: GrantScope, *, thread: str | None = None,
           session: str | None = None, at: float) -> tuple[Grant, float]:
    return Grant(id=grant_id, scope=scope, tool="execute", args={"command": "make"},
                 thread_id=thread, session_id=session), at


def test_one_read_answers_mode_rejections_and_grants(store: Store) -> None:
    with store.transaction() as tx:
        tx.set_thread_mode("t", "auto", at=1.0)
        tx.put_rejection(Rejection(thread_id="t", tool="execute", args_hash="sha256:x",
                                   reason="no"), at=1.0)
        for grant, at in (_grant("g-late", GrantScope.THREAD, thread="t", at=3.0),
                          _grant("g-early", GrantScope.ONCE, thread="t", at=2.0),
                          _grant("g-session", GrantScope.SESSION, session="s", at=2.5),
                          _grant("g-elsewhere", GrantScope.THREAD, thread="u", at=1.0)):
            tx.insert_grant(grant, at=at, request_id=None)
    memory = store.thread_memory("t")
    assert memory.mode == "auto" and memory.rejected == frozenset({"execute"})
    assert [g.id for _, g in memory.grants] == ["g-early", "g-late"]
    both = store.grants_for(thread_id="t", session_id="s", tool="execute")
    assert [g.id for g in both] == ["g-early", "g-session", "g-late"]
    assert [g.id for g in store.grants_for(thread_id=None, session_id="s", tool="x")] == [
        "g-session"]
    empty = store.thread_memory("nobody")
    assert empty.mode is None and empty.rejected == frozenset() and empty.grants == ()


def test_this_process_commits_are_remembered_at_once(store: Store) -> None:
    assert store.thread_memory("t").mode is None
    with store.transaction() as tx:
        tx.set_thread_mode("t", "full", at=1.0)
    assert store.thread_memory("t").mode == "full"


def test_another_process_mode_arrives_within_the_staleness(store: Store, twin: Store) -> None:
    assert store.thread_memory("t").mode is None
    gate = Gate(Policy.from_toml("[policy]\n", source="p.toml"), twin)
    gate.set_thread_mode("t", "auto")
    started = time.monotonic()
    _eventually(lambda: store.thread_memory("t").mode == "auto")
    assert time.monotonic() - started < 2.0


def test_a_grant_used_up_elsewhere_is_never_used_again(policy: Policy, store: Store,
                                                        twin: Store) -> None:
    with store.transaction() as tx:
        tx.insert_grant(Grant(id="g1", scope=GrantScope.ONCE, tool="execute",
                              args={"command": "make"}, thread_id="t"), at=0.0,
                        request_id=None)
    here, there = Gate(policy, store, agent="bot"), Gate(policy, twin, agent="bot")
    context = RunContext(thread_id="t")
    # This process remembers the grant unused; the other process uses it up.
    assert [g.uses for g in store.grants_for(thread_id="t", session_id=None, tool="x")] == [0]
    used = there.propose(ToolCall(id="c1", name="execute", args={"command": "make"}), context)
    assert used.kind is ProposalKind.ALLOWED and used.verdict.source == "grant:g1"
    again = here.propose(ToolCall(id="c2", name="execute", args={"command": "make"}), context)
    assert again.kind is ProposalKind.PENDING  # refused by the compare-and-set, asked again
    [grant] = store.grants_for(thread_id="t", session_id=None, tool="x")
    assert grant.uses == 1


def test_memory_is_bounded(sqlite_store: Store, tmp_path: Path) -> None:
    from signoff.store import recall

    for i in range(recall.MAX_KEPT + 10):
        sqlite_store.thread_memory(f"t{i}")
    kept = sqlite_store._recall._kept  # type: ignore[attr-defined]
    assert len(kept[1]) <= recall.MAX_KEPT
