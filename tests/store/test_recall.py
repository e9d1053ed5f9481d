"""Remembered thread memory (``signoff.store.thread_memory``) on both backends: one read for a
thread's mode, rejections and grants; this process's commits seen at once, another
process's within the stated staleness; a stale grant never lets a call through."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kit import twin_store
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import ProposalKind
from signoff.model import Grant, GrantScope, Rejection, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store


@pytest.fixture
def twin(store: Store) -> Iterator[Store]:
    other = twin_store(store)
    yield other
    other.close()


def _eventually(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "never became true"
        time.sleep(0.01)


def make_pending(store: Store, thread_id: str) -> Any:
    from signoff.model import ApprovalRequest, RequestStatus, Risk

    request = ApprovalRequest(
        id=f"req_{thread_id}", call_id="c", tool="execute", args="{}", args_hash="sha256:x",
        status=RequestStatus.PENDING, risk=Risk.LOW, summary="s", policy_version="v",
        created_at=1.0, updated_at=1.0, thread_id=thread_id, run_id="run-1")
    with store.transaction() as tx:
        tx.insert_request(request)
    return request


def _settled(store: Store) -> None:
    """Wait out start-up wake-ups (PostgreSQL's listener wakes everyone once it listens)."""
    previous = store.memory_token()
    while True:
        time.sleep(0.2)
        current = store.memory_token()
        if current == previous:
            return
        previous = current


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
    pending = make_pending(store, "t")
    fresh = store.thread_memory("t", fresh=True)
    assert fresh.pending == ((pending.id, pending.run_id),) and fresh.mode == "auto"
    empty = store.thread_memory("nobody")
    assert empty.mode is None and empty.rejected == frozenset() and empty.grants == ()


def test_this_process_commits_are_remembered_at_once(store: Store) -> None:
    assert store.thread_memory("t").mode is None
    with store.transaction() as tx:
        tx.set_thread_mode("t", "full", at=1.0)
    assert store.thread_memory("t").mode == "full"


def test_another_process_mode_arrives_within_the_staleness(store: Store, twin: Store) -> None:
    _settled(store)
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
    from signoff.store import thread_memory

    for i in range(thread_memory.MAX_KEPT + 10):
        sqlite_store.thread_memory(f"t{i}")
    kept = sqlite_store._memory_cache._kept  # type: ignore[attr-defined]
    assert len(kept[1]) <= thread_memory.MAX_KEPT


def test_commits_that_write_nothing_remembered_keep_it(store: Store,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "memory_staleness", None)  # only the token may drop it here
    _settled(store)
    reads: list[str] = []
    real = store._read_thread  # type: ignore[attr-defined]
    monkeypatch.setattr(store, "_read_thread", lambda t: reads.append(t) or real(t))
    store.thread_memory("t")
    with store.transaction() as tx:  # what the batched verdict log commits every 50 ms
        tx.append_audit("call.allowed", at_us=1, request_id=None, actor=None, data={})
    store.thread_memory("t")
    assert reads == ["t"]
    with store.transaction() as tx:
        tx.set_thread_mode("t", "auto", at=1.0)
    assert store.thread_memory("t").mode == "auto" and reads == ["t", "t"]


def test_an_entry_is_kept_no_longer_than_the_staleness(sqlite_store: Store,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = sqlite_store._read_thread  # type: ignore[attr-defined]
    monkeypatch.setattr(sqlite_store, "_read_thread", lambda t: reads.append(t) or real(t))
    sqlite_store.thread_memory("t")
    sqlite_store.thread_memory("t")
    assert len(reads) <= 2  # a second read only if 50 ms passed in between
    time.sleep(0.06)  # past SqliteStore's 50 ms
    sqlite_store.thread_memory("t")
    assert reads[-1] == "t" and len(reads) >= 2


def test_other_processes_requests_leave_memory_alone_on_postgres(
        postgres_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL: a NOTIFY for a request (every audited request event sends one) does
    not drop what is remembered; a commit that writes thread memory elsewhere does."""
    twin = twin_store(postgres_store)
    try:
        _settled(postgres_store)
        reads: list[str] = []
        real = postgres_store._read_thread  # type: ignore[attr-defined]
        monkeypatch.setattr(postgres_store, "_read_thread",
                            lambda t: reads.append(t) or real(t))
        postgres_store.thread_memory("t")
        before = postgres_store.change_token()
        make_pending(twin, "other")
        with twin.transaction() as tx:  # a request event: the trigger sends its NOTIFY
            tx.append_audit("request.created", at_us=1, request_id="req_other", actor="a",
                            data={})
        _eventually(lambda: postgres_store.change_token() != before)
        postgres_store.thread_memory("t")
        assert reads == ["t"]
        with twin.transaction() as tx:
            tx.set_thread_mode("t", "full", at=2.0)
        _eventually(lambda: postgres_store.thread_memory("t").mode == "full")
        assert len(reads) >= 2
    finally:
        twin.close()
