"""Verdict audit events are batched (signoff.kernel.verdicts), rejections are remembered through a
cache, and SQLite connections follow threads without leaking — on both backends."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from signoff import Decision, Gate, Policy, ToolCall
from signoff.kernel.outcomes import ProposalKind
from signoff.model import RunContext
from signoff.store.base import Store
from signoff.store.sqlite import SqliteStore

CTX = RunContext(thread_id="t-1", run_id="r-1")


def kinds(store: Store) -> list[str]:
    return [e.kind for e in store.audit_events()]


def test_allowed_and_denied_verdicts_reach_the_audit_in_a_batch(policy: Policy,
                                                                store: Store) -> None:
    gate = Gate(policy, store)
    assert gate.propose(ToolCall(id="a", name="write_file", args={"path": "x", "content": ""}),
                        CTX).kind is ProposalKind.ALLOWED
    assert gate.propose(ToolCall(id="d", name="execute", args={"command": "rm -rf x"}),
                        CTX).kind is ProposalKind.DENIED
    deadline = time.monotonic() + 5  # the background writer, without any flush
    while time.monotonic() < deadline and len(kinds(store)) < 2:
        time.sleep(0.01)
    assert kinds(store) == ["call.allowed", "call.denied"]
    assert store.verify_audit().ok


def test_flush_close_and_sync_mode(policy: Policy, store: Store) -> None:
    gate = Gate(policy, store)
    gate.verdicts.interval = 3600  # type: ignore[union-attr]  # only an explicit flush writes
    call = ToolCall(id="a", name="write_file", args={"path": "x", "content": ""})
    gate.propose(call, CTX)
    gate.flush()
    assert kinds(store) == ["call.allowed"]
    synchronous = Gate(policy, store, verdict_audit="sync")
    synchronous.propose(ToolCall(id="b", name="write_file", args={"path": "y", "content": ""}),
                        CTX)
    assert kinds(store) == ["call.allowed", "call.allowed"]  # on disk before propose returned
    with pytest.raises(Exception, match="verdict_audit"):
        Gate(policy, store, verdict_audit="later")


def test_closing_the_store_writes_what_is_queued(policy: Policy, tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    gate = Gate(policy, store)
    gate.verdicts.interval = 3600  # type: ignore[union-attr]
    for n in range(20):
        gate.propose(ToolCall(id=f"c{n}", name="write_file",
                              args={"path": f"f{n}", "content": ""}), CTX)
    store.close()  # the verdict log's close hook runs first
    reopened = SqliteStore(tmp_path / "s.db")
    assert kinds(reopened).count("call.allowed") == 20
    assert reopened.verify_audit().ok
    reopened.close()


def test_a_rejection_is_remembered_at_once_here_and_soon_elsewhere(policy: Policy,
                                                                   store: Store) -> None:
    gate = Gate(policy, store)
    _, token = gate.add_user("alice", roles=["ops"])
    alice = gate.authenticate(token)
    first = gate.propose(ToolCall(id="c1", name="execute", args={"command": "make build"}), CTX)
    assert first.request is not None
    gate.decide(first.request.id, Decision.reject("no", []), identity=alice)
    again = gate.propose(ToolCall(id="c2", name="execute", args={"command": "make build"}), CTX)
    assert (again.kind, again.verdict.code) == (ProposalKind.DENIED, "rejected_before")

    # Another process (here: another store object on the same database, whose commits this
    # one does not see directly) learns of a rejection it did not make.
    if store.backend == "sqlite":
        other_store: Store = SqliteStore(store.path)  # type: ignore[attr-defined]
    else:
        other_store = type(store)(store.dsn, schema=store.schema)  # type: ignore[attr-defined,call-arg]
    other = Gate(policy, other_store)
    ctx2 = RunContext(thread_id="t-2", run_id="r-2")
    lint = {"command": "make lint"}
    asked = other.propose(ToolCall(id="l1", name="execute", args=lint), ctx2)
    assert asked.kind is ProposalKind.PENDING  # and its cache now says: t-2 has no rejections
    assert asked.request is not None
    gate.decide(asked.request.id, Decision.reject("lint later", []), identity=alice)
    deadline = time.monotonic() + 2
    n = 0
    while True:
        n += 1
        later = other.propose(ToolCall(id=f"l{n + 1}", name="execute", args=lint), ctx2)
        if later.kind is ProposalKind.DENIED or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert later.verdict.code == "rejected_before"
    other.close()


def test_sqlite_connections_follow_threads_without_leaking(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    for _ in range(200):  # short-lived threads, as a tool-call pool makes them
        worker = threading.Thread(target=lambda: store.list_requests(limit=1))
        worker.start()
        worker.join()
    assert len(store._connections) <= 3
    store.close()
