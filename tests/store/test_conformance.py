"""The Store/Tx contract every backend must pass (docs/architecture.md: one suite, run per backend).

Parametrised by the ``store`` fixture over a real SQLite file and a real
PostgreSQL schema. Nothing here mocks a store: rows go into the database
and come back out, and the database itself is asked to refuse what it must.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
import time
import uuid
from typing import Any

import psycopg
import pytest

from backdoor import raw
from kit import twin_store
from signoff import audit
from signoff.canonical import args_hash, canonical_text
from signoff.errors import Conflict
from signoff.identity import Identity, IdentityKind, Session, token_hash
from signoff.kernel import lifecycle
from signoff.model import (
    ApprovalRequest,
    ApproveScope,
    DecisionKind,
    DecisionRecord,
    Grant,
    GrantScope,
    Rejection,
    RequestStatus,
    ReviewMode,
    Risk,
)
from signoff.store.base import Store
from signoff.store.schema import MIGRATIONS

REFUSED = (sqlite3.DatabaseError, psycopg.Error)

# ---- helpers -------------------------------------------------------------------------------------


def make_request(**changes: Any) -> ApprovalRequest:
    args = {"command": "ls -la", "n": 1.5, "deep": {"b": [1, 2.25, None], "a": "é\u2028☃"}}
    fields: dict[str, Any] = {
        "id": "req_" + uuid.uuid4().hex,
        "call_id": "call_" + uuid.uuid4().hex[:8],
        "tool": "execute",
        "args": canonical_text(args),
        "args_hash": args_hash(args),
        "status": RequestStatus.PENDING,
        "risk": Risk.MEDIUM,
        "summary": "Run shell command: 'ls -la'",
        "policy_version": "kernel-1",
        "created_at": 1_700_000_000.123456,
        "updated_at": 1_700_000_000.123456,
        "thread_id": "t-1",
    }
    fields.update(changes)
    return ApprovalRequest(**fields)


def full_request() -> ApprovalRequest:
    """Every field set to something other than its default."""
    args = {"z": 0.1, "a": [1e21, -0.0, 3], "s": "quote\" back\\slash \u0000 nul", "u": "日本"}
    edited = {"z": 0.30000000000000004}
    return make_request(
        args=canonical_text(args), args_hash=args_hash(args), status=RequestStatus.APPROVED,
        risk=Risk.CRITICAL, summary="Call execute(…)", policy_version="p-7",
        created_at=0.1 + 0.2, updated_at=1e10 + 0.5, thread_id="thread-é", run_id="run-1",
        session_id="sess-1", parent_call="call-parent", principal="alice", agent="bot",
        description="the model says: harmless", expected_effect="runs a shell command",
        evidence=("file:a.txt", "url:https://example.org/x"),
        resource_versions={"b": "sha256:bb", "a": "absent"}, roles=("ops", "sre"),
        approvals_required=3, expires_at=1_700_003_600.25, mandatory=True, decision_id="dec_x",
        reasons=({"step": "gated", "rule": None, "effect": None, "code": "gated",
                  "text": "execute is a gated tool"},),
        review_mode=ReviewMode.AUTO, approved_args=canonical_text(edited),
        approved_hash=args_hash(edited), outcome_code="code", outcome_reason="why",
        alternatives=("do x", "do y"), response="a message", result='{"ok":true}',
        error="E: boom", fencing_token=2**40, lease_until=1_700_000_300.75, executor="host:1",
        version=4, changes=({"path": "/notes.md", "kind": "diff", "truncated": False,
                             "diff": "--- a/notes.md\n+++ b/notes.md\n-<é>\n+</pre>\n",
                             "size": 7, "sha256": None, "lines": 4},))


def insert(store: Store, request: ApprovalRequest) -> ApprovalRequest:
    with store.transaction() as tx:
        tx.insert_request(request)
    return request


def append(store: Store, n: int, *, kind: str = "test.event") -> None:
    with store.transaction() as tx:
        for i in range(n):
            tx.append_audit(kind, at_us=1_000_000 + i, request_id=None, actor="tester",
                            data={"i": i})


def q(store: Store, statement: str) -> str:
    return statement if store.backend == "sqlite" else statement.replace("?", "%s")


# ---- migrations ----------------------------------------------------------------------------------


def test_migrate_is_idempotent_and_records_versions(store: Store) -> None:
    assert store.migrate() == len(MIGRATIONS)
    insert(store, make_request())
    assert store.migrate() == len(MIGRATIONS)  # again: nothing re-applied, nothing lost
    with raw(store) as conn:
        rows = conn.execute("SELECT version, name FROM signoff_migrations "
                            "ORDER BY version").fetchall()
        assert [tuple(r) for r in rows] == [(i + 1, m.name) for i, m in enumerate(MIGRATIONS)]
        assert conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 1
        assert conn.execute("SELECT COUNT(*) FROM audit_head").fetchone()[0] == 1


# ---- requests ------------------------------------------------------------------------------------


def test_request_round_trips_every_field_exactly(store: Store) -> None:
    request = full_request()
    insert(store, request)
    got = store.get_request(request.id)
    assert got == request
    assert got is not None
    for name in request.__dataclass_fields__:
        assert getattr(got, name) == getattr(request, name), name
        assert type(getattr(got, name)) is type(getattr(request, name)) or isinstance(
            getattr(request, name), dict), name
    assert got.args.encode() == request.args.encode()  # canonical bytes, byte for byte
    assert got.approved_args == request.approved_args
    assert got.created_at == 0.1 + 0.2  # floats exact, not rounded
    assert isinstance(got.evidence, tuple) and isinstance(got.roles, tuple)
    assert isinstance(got.alternatives, tuple) and isinstance(got.reasons, tuple)
    assert dict(got.resource_versions) == {"a": "absent", "b": "sha256:bb"}
    assert isinstance(got.changes, tuple) and got.changes[0]["diff"].endswith("+</pre>\n")
    assert got.mandatory is True
    with store.transaction() as tx:
        assert tx.get_request(request.id) == request
        assert tx.get_request(request.id, lock=True) == request
        assert tx.find_request("thread-é", request.call_id) == request
        assert tx.find_request("thread-é", "other") is None
        assert tx.find_request("other", request.call_id) is None
    assert store.get_request("req_missing") is None


def test_request_defaults_round_trip(store: Store) -> None:
    request = make_request(thread_id=None)
    insert(store, request)
    assert store.get_request(request.id) == request


def test_duplicate_request_is_a_conflict_and_writes_nothing(store: Store) -> None:
    request = insert(store, make_request())
    clash = make_request(call_id=request.call_id, thread_id=request.thread_id)
    with pytest.raises(Conflict) as caught, store.transaction() as tx:
        tx.append_audit("request.created", at_us=1, request_id=clash.id, actor=None, data={})
        tx.insert_request(clash)
    assert caught.value.code == "unique_violation"
    assert store.get_request(clash.id) is None
    assert list(store.audit_events()) == []


def test_update_request_is_a_compare_and_set(store: Store) -> None:
    request = insert(store, make_request())
    with store.transaction() as tx:
        moved = tx.update_request(request, status=RequestStatus.APPROVED, updated_at=5.5,
                                  alternatives=("a",), resource_versions={"f": "v"})
    assert moved is not None
    assert moved.version == request.version + 1
    assert moved.status is RequestStatus.APPROVED
    assert moved.alternatives == ("a",)
    assert dict(moved.resource_versions) == {"f": "v"}
    assert moved.updated_at == 5.5
    with store.transaction() as tx:
        assert tx.update_request(request, status=RequestStatus.REJECTED) is None  # stale
    assert store.get_request(request.id) == moved
    with store.transaction() as tx:
        again = tx.update_request(moved, outcome_code="x")
    assert again is not None and again.version == moved.version + 1


def test_requests_in_approved_ids_and_list_filters(store: Store) -> None:
    made = []
    statuses = [RequestStatus.PENDING, RequestStatus.APPROVED, RequestStatus.APPROVED,
                RequestStatus.EXECUTING, RequestStatus.PENDING]
    for i, status in enumerate(statuses):
        made.append(insert(store, make_request(status=status, created_at=100.0 + i,
                                               thread_id="t-a" if i % 2 == 0 else "t-b")))
    with store.transaction() as tx:
        assert tx.approved_ids(10) == [made[1].id, made[2].id]
        assert tx.approved_ids(1) == [made[1].id]
        pending = tx.requests_in([RequestStatus.PENDING], 10)
        assert [r.id for r in pending] == [made[0].id, made[4].id]
        both = tx.requests_in([RequestStatus.PENDING, RequestStatus.EXECUTING], 10)
        assert [r.id for r in both] == [made[0].id, made[3].id, made[4].id]
        assert len(tx.requests_in([RequestStatus.PENDING, RequestStatus.EXECUTING], 2)) == 2
    newest_first = [r.id for r in reversed(made)]
    assert [r.id for r in store.list_requests()] == newest_first
    assert [r.id for r in store.list_requests(limit=2)] == newest_first[:2]
    assert [r.id for r in store.list_requests(status=RequestStatus.PENDING)] == [
        made[4].id, made[0].id]
    assert [r.id for r in store.list_requests(thread_id="t-b")] == [made[3].id, made[1].id]
    assert [r.id for r in store.list_requests(status=RequestStatus.APPROVED,
                                              thread_id="t-a")] == [made[2].id]
    assert store.list_requests(status=RequestStatus.FAILED) == []
    assert [r.id for r in store.pending_on_thread("t-a")] == [made[4].id, made[0].id]
    assert store.pending_on_thread("t-b") == []


def test_approved_ids_skips_rows_another_transaction_holds(postgres_store: Store) -> None:
    """PostgreSQL only: SQLite serialises writers, so no other transaction holds a row."""
    store = postgres_store
    first = insert(store, make_request(status=RequestStatus.APPROVED, created_at=1.0))
    second = insert(store, make_request(status=RequestStatus.APPROVED, created_at=2.0))
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with store.transaction() as tx:
            tx.get_request(first.id, lock=True)
            held.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(5)
        with store.transaction() as tx:
            assert tx.approved_ids(10) == [second.id]
    finally:
        release.set()
        thread.join()
    with store.transaction() as tx:
        assert tx.approved_ids(10) == [first.id, second.id]


# ---- decisions -----------------------------------------------------------------------------------


def decision(request_id: str, approver: str, at: float, **changes: Any) -> DecisionRecord:
    fields: dict[str, Any] = {"id": "dec_" + uuid.uuid4().hex, "request_id": request_id,
                              "kind": DecisionKind.APPROVE, "approver": approver,
                              "created_at": at, "args_hash": "sha256:aa"}
    fields.update(changes)
    return DecisionRecord(**fields)


def test_decisions_round_trip_in_time_order(store: Store) -> None:
    request = insert(store, make_request())
    other = insert(store, make_request())
    late = decision(request.id, "bob", 30.0, kind=DecisionKind.REJECT, args_hash=None,
                    reason="no", alternatives=("try x", "try y"))
    early = decision(request.id, "alice", 10.0, kind=DecisionKind.EDIT, args='{"a":1}',
                     scope=ApproveScope.THREAD)
    middle = decision(request.id, "carol", 20.0, kind=DecisionKind.RESPOND, args_hash=None,
                      message="use the other tool")
    elsewhere = decision(other.id, "dave", 15.0)
    with store.transaction() as tx:
        for d in (late, early, middle, elsewhere):
            tx.insert_decision(d)
        assert tx.decisions(request.id) == [early, middle, late]
    assert store.decisions(request.id) == [early, middle, late]
    assert store.decisions(other.id) == [elsewhere]
    assert store.decisions("req_none") == []
    # Same instant: ties are broken by id, so every reader sees one order.
    a = decision(other.id, "x", 99.0, id="dec_b")
    b = decision(other.id, "y", 99.0, id="dec_a")
    with store.transaction() as tx:
        tx.insert_decision(a)
        tx.insert_decision(b)
    assert [d.id for d in store.decisions(other.id)] == [elsewhere.id, "dec_a", "dec_b"]


def test_one_approval_per_approver_and_hash(store: Store) -> None:
    request = insert(store, make_request())
    with store.transaction() as tx:
        tx.insert_decision(decision(request.id, "alice", 1.0))
    with pytest.raises((Conflict, *REFUSED)), store.transaction() as tx:
        tx.insert_decision(decision(request.id, "alice", 2.0))
    assert len(store.decisions(request.id)) == 1


# ---- audit ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_audit_chain_indexes_links_and_verifies(store: Store) -> None:
    request = insert(store, make_request())
    with store.transaction() as tx:
        first = tx.append_audit("request.created", at_us=1, request_id=request.id,
                                actor="agent", data={"b": 2, "a": [1, "é"]})
        second = tx.append_audit("decision.recorded", at_us=2, request_id=request.id,
                                 actor="alice", data={})
    append(store, 3)
    events = list(store.audit_events())
    assert [e.index for e in events] == [1, 2, 3, 4, 5]
    # append_audit gives the event's number (its index once sealed: the chain's order);
    # the index and hash are the chain's, given when it is sealed (PostgreSQL: after commit).
    assert isinstance(first, int) and first < second
    assert [e.kind for e in events[:2]] == ["request.created", "decision.recorded"]
    assert events[0].prev_hash == audit.GENESIS
    for before, after in itertools.pairwise(events):
        assert after.prev_hash == before.hash
    assert events[0].data == '{"a":[1,"é"],"b":2}'  # canonical text, stored as is
    assert events[0].request_id == request.id and events[0].actor == "agent"
    result = audit.verify(events)
    assert result.ok and result.count == 5 and result.first_bad is None


def test_audit_chain_stays_a_chain_across_connections_and_rollbacks(store: Store) -> None:
    """Each thread has its own connection (SQLite) and remembers the head it committed;
    appends from another connection, or a rolled-back append, must not fork the chain."""

    def append_in_thread(at: int, *, fail: bool = False) -> None:
        raised: list[BaseException] = []

        def work() -> None:
            try:
                with store.transaction() as tx:
                    tx.append_audit("thread.event", at_us=at, request_id=None, actor="t",
                                    data={"at": at})
                    if fail:
                        raise RuntimeError("roll back")
            except BaseException as exc:  # handed to the test thread
                raised.append(exc)

        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        assert [type(e) for e in raised] == ([RuntimeError] if fail else [])

    append(store, 1)
    append_in_thread(2)
    append(store, 1)  # this thread's remembered head is stale now
    append_in_thread(3, fail=True)
    append(store, 1)
    append_in_thread(4)
    append(store, 2)
    events = list(store.audit_events())
    assert [e.index for e in events] == list(range(1, 8))
    assert [e.at_us for e in events if e.kind == "thread.event"] == [2, 4]
    result = store.verify_audit()
    assert result.ok and result.count == 7
    assert store.audit_head() == (7, events[-1].hash)


def test_racing_appends_from_two_stores_keep_one_chain(store: Store) -> None:
    """Two stores on one database (two processes, as far as each knows), four threads each:
    every store appends on its guess of the head, which the other keeps making stale. No
    append fails, none is lost, and the events form one chain."""
    twin = twin_store(store)
    failures: list[BaseException] = []
    rounds = 20

    def work(target: Store, worker: int) -> None:
        try:
            for n in range(rounds):
                with target.transaction() as tx:
                    for k in range(1 + n % 2):
                        tx.append_audit("race", at_us=n, request_id=f"req_{worker}",
                                        actor=f"w{worker}", data={"n": n, "k": k})
        except BaseException as exc:  # handed to the test thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(twin if w % 2 else store, w))
               for w in range(8)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        twin.close()
    assert failures == []
    events = list(store.audit_events())
    assert [e.index for e in events] == list(range(1, 8 * 30 + 1))
    result = store.verify_audit()
    assert result.ok and result.count == 8 * 30
    assert store.audit_head() == (8 * 30, events[-1].hash)


@pytest.mark.parametrize("statement", [
    "UPDATE audit SET data = '{}' WHERE idx = 1",
    "UPDATE audit SET hash = 'x'",
    "DELETE FROM audit WHERE idx = 1",
    "DELETE FROM audit",
])
def test_database_refuses_audit_update_and_delete(store: Store, statement: str) -> None:
    append(store, 2)
    before = list(store.audit_events())
    # Through the store's own transaction …
    with pytest.raises(REFUSED, match="append-only"), store.transaction() as tx:
        tx._exec(statement)  # type: ignore[attr-defined]
    # … and through a connection of our own.
    with raw(store) as conn, pytest.raises(REFUSED, match="append-only"):
        conn.execute(statement)
    assert list(store.audit_events()) == before
    assert audit.verify(store.audit_events()).ok


def test_postgres_refuses_audit_truncate(postgres_store: Store) -> None:
    store = postgres_store
    append(store, 1)
    with raw(store) as conn, pytest.raises(psycopg.Error, match="append-only"):
        conn.execute("TRUNCATE audit")
    assert len(list(store.audit_events())) == 1


def test_audit_events_paging(store: Store) -> None:
    append(store, 1234)
    events = list(store.audit_events())
    assert [e.index for e in events] == list(range(1, 1235))
    assert audit.verify(events).ok
    assert [e.index for e in store.audit_events(after=1000)] == list(range(1001, 1235))
    assert [e.index for e in store.audit_events(after=10, limit=5)] == [11, 12, 13, 14, 15]
    page = list(store.audit_events(after=100, limit=1500))
    assert [e.index for e in page] == list(range(101, 1235))
    exact = list(store.audit_events(limit=1000))
    assert [e.index for e in exact] == list(range(1, 1001))
    assert list(store.audit_events(after=1234)) == []
    assert list(store.audit_events(limit=0)) == []


# ---- fencing, rollback ---------------------------------------------------------------------------


def test_a_claim_token_is_its_audit_index_and_increases(store: Store) -> None:
    tokens: list[int] = []
    for n in range(3):
        request = insert(store, make_request(status=RequestStatus.APPROVED, call_id=f"c{n}"))
        with store.transaction() as tx:
            tokens.append(lifecycle.claim(tx, request, now=2.0, actor="ex", lease_until=9.0))
        claimed = store.get_request(request.id)
        assert claimed is not None and claimed.fencing_token == tokens[-1]
        assert claimed.status is RequestStatus.EXECUTING and claimed.executor == "ex"
        [event] = [e for e in store.audit_events() if e.index == tokens[-1]]
        assert (event.kind, event.request_id) == ("request.executing", request.id)
    assert tokens == sorted(set(tokens))
    late = insert(store, make_request(status=RequestStatus.APPROVED, call_id="late"))
    with pytest.raises(RuntimeError), store.transaction() as tx:
        lifecycle.claim(tx, late, now=3.0, actor="ex", lease_until=9.0)
        raise RuntimeError("rolled back")
    assert store.get_request(late.id).status is RequestStatus.APPROVED  # type: ignore[union-attr]
    with store.transaction() as tx:
        assert lifecycle.claim(tx, late, now=3.0, actor="ex", lease_until=9.0) > tokens[-1]


def test_rollback_on_exception_leaves_nothing(store: Store) -> None:
    request = make_request()
    with pytest.raises(RuntimeError, match="boom"), store.transaction() as tx:
        tx.insert_request(request)
        tx.insert_decision(decision(request.id, "alice", 1.0))
        tx.append_audit("request.created", at_us=1, request_id=request.id, actor=None,
                        data={})
        tx.put_rejection(Rejection(thread_id="t", tool="x", args_hash="h", reason="r"), at=1.0)
        tx.insert_grant(Grant(id="g-rb", scope=GrantScope.THREAD, tool="x", thread_id="t"),
                        at=1.0, request_id=request.id)
        tx.set_thread_mode("t", "full", at=1.0)
        tx.put_idempotent_response("k", request_id=request.id, body_hash="b", response="{}",
                                   at=1.0)
        tx.insert_user(Identity(name="u"), token_hash="sha256:u", at=1.0)
        raise RuntimeError("boom")
    assert store.get_request(request.id) is None
    assert store.decisions(request.id) == []
    assert list(store.audit_events()) == []
    assert store.rejection_for("t", "x", "h") is None
    assert list(store.grants_for(thread_id="t", session_id=None, tool="x")) == []
    assert store.thread_mode("t") is None
    with store.transaction() as tx:
        assert tx.idempotent_response("k") is None
        assert tx.get_user("u") is None
        # The audit head did not move either: the next event is number 1.
        tx.append_audit("after", at_us=2, request_id=None, actor=None, data={})
    assert [e.index for e in store.audit_events()] == [1]
    assert audit.verify(store.audit_events()).ok


def test_a_failed_statement_rolls_back_the_whole_transaction(store: Store) -> None:
    existing = insert(store, make_request())
    fresh = make_request()
    with pytest.raises((Conflict, *REFUSED)), store.transaction() as tx:
        tx.insert_request(fresh)
        tx.append_audit("x", at_us=1, request_id=fresh.id, actor=None, data={})
        tx.insert_request(existing)  # primary key clash
    assert store.get_request(fresh.id) is None
    assert list(store.audit_events()) == []


# ---- memory: grants and rejections ---------------------------------------------------------------


def test_grants_for_scopes_and_use_limits(store: Store) -> None:
    thread = Grant(id="g-thread", scope=GrantScope.THREAD, tool="execute",
                   args={"command": "ls -la"}, thread_id="t-1", session_id="s-1",
                   expires_at=1e12 + 0.5, max_uses=2, created_by="alice")
    once = Grant(id="g-once", scope=GrantScope.ONCE, tool="write_file", args={}, thread_id="t-1",
                 max_uses=1)
    session = Grant(id="g-session", scope=GrantScope.SESSION, tool="execute",
                    args={"command": "re:^make( .*)?$"}, thread_id="t-9", session_id="s-1")
    other = Grant(id="g-other", scope=GrantScope.THREAD, tool="execute", thread_id="t-2")
    with store.transaction() as tx:
        for at, grant in enumerate((thread, once, session, other)):
            tx.insert_grant(grant, at=float(at), request_id="req_1")
    got = list(store.grants_for(thread_id="t-1", session_id="s-1", tool="execute"))
    assert got == [thread, once, session]
    assert list(store.grants_for(thread_id="t-1", session_id=None, tool="x")) == [thread, once]
    assert list(store.grants_for(thread_id=None, session_id="s-1", tool="x")) == [session]
    assert list(store.grants_for(thread_id="t-2", session_id="s-2", tool="x")) == [other]
    assert list(store.grants_for(thread_id=None, session_id=None, tool="x")) == []
    with store.transaction() as tx:
        assert tx.use_grant("g-thread")
        assert tx.use_grant("g-thread")
        assert not tx.use_grant("g-thread")  # max_uses = 2
        assert tx.use_grant("g-once")
        assert not tx.use_grant("g-once")
        assert not tx.use_grant("g-missing")
        for _ in range(5):
            assert tx.use_grant("g-session")  # unlimited
    uses = {g.id: g.uses for g in store.grants_for(thread_id="t-1", session_id="s-1", tool="x")}
    assert uses == {"g-thread": 2, "g-once": 1, "g-session": 5}


def test_rejections_put_get_and_replace(store: Store) -> None:
    first = Rejection(thread_id="t", tool="execute", args_hash="sha256:1", reason="no",
                      alternatives=("ls", "pwd"), request_id="req_1")
    with store.transaction() as tx:
        tx.put_rejection(first, at=1.0)
        assert tx.rejection_for("t", "execute", "sha256:1") == first
    assert store.rejection_for("t", "execute", "sha256:1") == first
    assert store.rejection_for("t", "execute", "sha256:2") is None
    assert store.rejection_for("u", "execute", "sha256:1") is None
    assert store.rejection_for("t", "deploy", "sha256:1") is None
    second = Rejection(thread_id="t", tool="execute", args_hash="sha256:1", reason="still no")
    with store.transaction() as tx:
        tx.put_rejection(second, at=2.0)
    assert store.rejection_for("t", "execute", "sha256:1") == second


# ---- users, idempotency, threads -----------------------------------------------------------------


def test_users(store: Store) -> None:
    alice = Identity(name="alice", roles=("ops", "sre"))
    bot = Identity(name="bot", kind=IdentityKind.AGENT)
    with store.transaction() as tx:
        tx.insert_user(alice, token_hash=token_hash("so_alice"), at=1.0)
        tx.insert_user(bot, token_hash=token_hash("so_bot"), at=2.0)
    with store.transaction() as tx:
        assert tx.get_user("alice") == alice
        assert tx.get_user("bot") == bot
        assert tx.get_user("nobody") is None
        assert tx.user_by_token(token_hash("so_alice")) == alice
        assert tx.user_by_token(token_hash("so_wrong")) is None
        assert tx.user_by_token("so_alice") is None  # only the hash is a key
        assert tx.set_user("alice", roles=("ops",))
        assert tx.get_user("alice") == Identity(name="alice", roles=("ops",))
        assert tx.set_user("alice", disabled=True)
        got = tx.get_user("alice")
        assert got is not None and got.disabled and not got.may_decide
        assert tx.set_user("alice", roles=(), disabled=False)
        assert tx.get_user("alice") == Identity(name="alice")
        assert not tx.set_user("nobody", roles=("x",))
        assert not tx.set_user("nobody", disabled=True)
    with raw(store) as conn:
        stored = conn.execute("SELECT token_hash FROM users ORDER BY name").fetchall()
    assert [r[0] for r in stored] == [token_hash("so_alice"), token_hash("so_bot")]
    with pytest.raises((Conflict, *REFUSED)), store.transaction() as tx:
        tx.insert_user(Identity(name="alice"), token_hash="sha256:other", at=3.0)


def test_accounts_login_links_and_sessions(store: Store) -> None:
    boss = Identity(name="boss", kind=IdentityKind.ADMIN)
    with store.transaction() as tx:
        tx.insert_user(boss, token_hash=token_hash("so_boss"), at=1.0)
        tx.insert_user(Identity(name="ann", roles=("ops",)), token_hash=token_hash("so_ann"),
                       at=2.0, expires_at=100.0)
    ann = store.account_by_token(token_hash("so_ann"))
    assert ann is not None and ann.token_expires_at == 100.0 and ann.token_issued_at == 2.0
    assert ann.status(99.0) == "active" and ann.status(100.0) == "token_expired"
    with store.transaction() as tx:
        assert tx.active_admins() == ["boss"]
        assert tx.set_token("ann", token_hash=token_hash("so_ann2"), at=5.0, expires_at=None)
        tx.insert_login_link("sha256:link", user="ann", at=10.0, expires_at=20.0,
                             created_by="boss")
        tx.insert_login_link("sha256:late", user="ann", at=10.0, expires_at=11.0,
                             created_by=None)
    assert store.account_by_token(token_hash("so_ann")) is None
    renewed = store.account_by_token(token_hash("so_ann2"))
    assert renewed is not None and renewed.token_issued_at == 5.0
    assert renewed.token_expires_at is None
    with store.transaction() as tx:
        assert tx.use_login_link("sha256:link", at=12.0) == ("ok", "ann")
        assert tx.use_login_link("sha256:link", at=13.0) == ("used", "ann")  # once
        assert tx.use_login_link("sha256:late", at=12.0) == ("expired", "ann")
        assert tx.use_login_link("sha256:none", at=12.0) == ("unknown", None)
    first = Session(id="ses_1", user="ann", created_at=12.0, last_seen=12.0, expires_at=50.0,
                    idle_timeout=10.0, via="link")
    second = Session(id="ses_2", user="ann", created_at=13.0, last_seen=13.0, expires_at=50.0,
                     idle_timeout=10.0, via="token")
    with store.transaction() as tx:
        tx.insert_session(first, secret_hash="sha256:s1")
        tx.insert_session(second, secret_hash="sha256:s2")
        tx.touch_session("ses_1", at=15.0)
        tx.touch_session("ses_1", at=14.0)  # never backwards
    found = store.session_by_secret("sha256:s1")
    assert found is not None and found[1].name == "ann"
    assert found[0] == Session(id="ses_1", user="ann", created_at=12.0, last_seen=15.0,
                               expires_at=50.0, idle_timeout=10.0, via="link")
    assert store.session_by_secret("ses_1") is None  # the id is no secret
    assert [s.id for s in store.sessions_of("ann")] == ["ses_1", "ses_2"]
    with store.transaction() as tx:
        assert [s.id for s in tx.delete_sessions(secret_hash="sha256:s2")] == ["ses_2"]
        assert tx.delete_sessions(user="ann", session_id="ses_2") == []
        assert tx.mark_removed("ann", at=30.0, tombstone_hash="removed:x")
        assert not tx.mark_removed("ann", at=31.0, tombstone_hash="removed:y")
        assert [s.id for s in tx.delete_sessions(user="ann")] == ["ses_1"]
        gone = tx.account("ann")
        assert gone is not None and gone.removed_at == 30.0 and gone.status(31.0) == "removed"
        assert not tx.set_token("ann", token_hash="sha256:z", at=32.0, expires_at=None)
    assert store.account_by_token(token_hash("so_ann2")) is None
    assert [a.name for a in store.accounts()] == ["boss"]
    assert [a.name for a in store.accounts(removed=True)] == ["ann", "boss"]


def test_idempotency_records(store: Store) -> None:
    with store.transaction() as tx:
        assert tx.idempotent_response("key-1") is None
        tx.put_idempotent_response("key-1", request_id="req_1", body_hash="sha256:b",
                                   response='{"decision_id": "dec_1"}', at=1.0)
    with store.transaction() as tx:
        assert tx.idempotent_response("key-1") == ("req_1", "sha256:b",
                                                   '{"decision_id": "dec_1"}')
        assert tx.idempotent_response("key-2") is None
    with pytest.raises((Conflict, *REFUSED)), store.transaction() as tx:
        tx.put_idempotent_response("key-1", request_id="req_2", body_hash="x", response="{}",
                                   at=2.0)
    with store.transaction() as tx:
        assert tx.idempotent_response("key-1") == ("req_1", "sha256:b",
                                                   '{"decision_id": "dec_1"}')


def test_thread_modes(store: Store) -> None:
    assert store.thread_mode("t") is None
    with store.transaction() as tx:
        tx.set_thread_mode("t", "auto", at=1.0)
        assert tx.thread_mode("t") == "auto"
    assert store.thread_mode("t") == "auto"
    with store.transaction() as tx:
        tx.set_thread_mode("t", "full", at=2.0)
        tx.set_thread_mode("u", "manual", at=2.0)
    assert store.thread_mode("t") == "full"
    assert store.thread_mode("u") == "manual"


def test_who_set_a_mode_and_who_asked_on_a_thread(store: Store) -> None:
    with store.transaction() as tx:
        tx.set_thread_mode("t", "full", at=1.0, by="ann")
        tx.set_thread_mode("u", "auto", at=1.0)
        tx.insert_request(make_request(id="req_p1", call_id="c1", thread_id="t",
                                       principal="ann", agent=None))
        tx.insert_request(make_request(id="req_p2", call_id="c2", thread_id="t",
                                       principal="bot", agent="runner"))
        tx.insert_request(make_request(id="req_p3", call_id="c3", thread_id="t",
                                       principal="ann", agent="runner"))
        tx.insert_request(make_request(id="req_p4", call_id="c4", thread_id="v",
                                       principal="cy", agent=None))
        assert tx.thread_parties("t") == {"ann", "bot", "runner"}
    assert store.thread_parties("t") == {"ann", "bot", "runner"}
    assert store.thread_parties("none") == frozenset()
    memory = store.thread_memory("t", fresh=True)
    assert (memory.mode, memory.mode_by) == ("full", "ann")
    assert store.thread_memory("u", fresh=True).mode_by is None


# ---- waking --------------------------------------------------------------------------------------


def _commit_later(store: Store, request_id: str, delay: float, notify: bool = True) -> float:
    committed: list[float] = []

    def work() -> None:
        time.sleep(delay)
        with store.transaction() as tx:
            tx.append_audit("wake", at_us=1, request_id=request_id, actor=None, data={})
            if notify:
                tx.notify(request_id)
        committed.append(time.monotonic())

    thread = threading.Thread(target=work)
    since = store.change_token()
    thread.start()
    store.wait(request_id, timeout=5.0, since=since)
    woke = time.monotonic()
    thread.join()
    assert committed, "the committing thread failed"
    return woke - committed[0]


def _warm(store: Store) -> None:
    """PostgreSQL starts its listener on first use; let its reconnect wake-up pass."""
    store.change_token()
    time.sleep(0.3)


@pytest.fixture
def long_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL's waits re-read every second even unwoken; stretched to 30 s here, a waiter
    that returns within two seconds can only have been woken by the commit's notification
    (with a margin a loaded machine's notification lag does not eat)."""
    monkeypatch.setattr("signoff.store.postgres.WAIT_SLICE", 30.0)


@pytest.mark.usefixtures("long_slice")
def test_commit_in_another_thread_wakes_a_waiter_promptly(store: Store) -> None:
    _warm(store)
    lag = _commit_later(store, "req_w", 0.2)
    assert lag < 2.0


@pytest.mark.usefixtures("long_slice")
def test_a_commit_between_token_and_wait_is_not_missed(store: Store) -> None:
    _warm(store)
    since = store.change_token()
    thread = threading.Thread(target=lambda: append_and_notify(store, "req_m"))
    thread.start()
    thread.join()
    # The commit is heard before the wait begins (on a loaded machine a notification can take
    # longer than the assertion below allows; that lag is not what this test is about).
    deadline = time.monotonic() + 10.0
    while store.change_token() == since:
        assert time.monotonic() < deadline, "the commit was never heard"
        time.sleep(0.01)
    started = time.monotonic()
    store.wait("req_m", timeout=60.0, since=since)
    # A wait that ignored ``since`` would sleep until the next change, or its re-read slice.
    assert time.monotonic() - started < 0.5


def append_and_notify(store: Store, request_id: str) -> None:
    with store.transaction() as tx:
        tx.append_audit("wake", at_us=1, request_id=request_id, actor=None, data={})
        tx.notify(request_id)


def test_wait_without_change_times_out(store: Store) -> None:
    _warm(store)
    started = time.monotonic()
    store.wait("req_none", timeout=0.3, since=store.change_token())
    elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 1.5


def test_sqlite_commit_by_another_connection_wakes_a_waiter(sqlite_store: Store) -> None:
    """SQLite's cross-process wake-up: PRAGMA data_version polling."""
    store = sqlite_store
    append(store, 1)
    since = store.change_token()
    timer = threading.Timer(0.2, _raw_append, args=(store,))
    started = time.monotonic()
    timer.start()
    store.wait("req_x", timeout=5.0, since=since)
    timer.join()
    assert time.monotonic() - started < 0.2 + 0.5


def _raw_append(store: Store) -> None:
    with raw(store) as conn:
        conn.execute("INSERT INTO threads (id, review_mode, updated_at) VALUES ('z', 'auto', 1)")


@pytest.mark.slow
def test_postgres_notifications_stay_in_their_schema(postgres_store: Store,
                                                     tmp_path: Any) -> None:
    store = postgres_store
    from kit import PG_DSN
    from signoff.store.postgres import PostgresStore

    neighbour = PostgresStore(PG_DSN, schema="t_" + uuid.uuid4().hex[:12], setup=True)
    try:
        _warm(store)
        _warm(neighbour)
        since = store.change_token()
        append_and_notify(neighbour, "req_n")
        started = time.monotonic()
        store.wait("req_n", timeout=0.4, since=since)
        assert time.monotonic() - started >= 0.35  # a neighbour's commit is not ours
    finally:
        neighbour.close()
        neighbour.drop_schema()


def test_a_database_made_by_the_first_schema_upgrades(backend: str, tmp_path: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from kit import make_store
    from signoff.store import postgres, sqlite

    monkeypatch.setattr(sqlite, "MIGRATIONS", MIGRATIONS[:1])
    monkeypatch.setattr(postgres, "MIGRATIONS", MIGRATIONS[:1])
    old = make_store(backend, tmp_path)
    try:
        with raw(old) as conn:
            assert conn.execute("SELECT COUNT(*) FROM counters").fetchone()[0] == 1
        monkeypatch.undo()
        assert old.migrate() == len(MIGRATIONS)
        with raw(old) as conn:
            versions = [r[0] for r in conn.execute(
                "SELECT version FROM signoff_migrations ORDER BY version").fetchall()]
            assert versions == list(range(1, len(MIGRATIONS) + 1))
            with pytest.raises((sqlite3.OperationalError, psycopg.errors.UndefinedTable)):
                conn.execute("SELECT COUNT(*) FROM counters")
        with old.transaction() as tx:
            tx.append_audit("probe", at_us=1, request_id=None, actor=None, data={})
        event = list(old.audit_events())[-1]
        assert event.kind == "probe" and old.audit_head() == (event.index, event.hash)
        assert old.verify_audit().ok
    finally:
        old.close()
        drop = getattr(old, "drop_schema", None)
        if drop is not None:
            drop()


def test_postgres_refuses_a_database_behind_its_code(postgres_store: Store,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A process upgraded before ``signoff db migrate`` ran stops with a typed error instead of
    running without the newer schema's triggers; migrating lets it go on."""
    from kit import PG_DSN
    from signoff.errors import StoreError
    from signoff.store import postgres

    schema = "t_" + uuid.uuid4().hex[:12]
    monkeypatch.setattr(postgres, "MIGRATIONS", MIGRATIONS[:3])
    old = postgres.PostgresStore(PG_DSN, schema=schema, setup=True)
    old.close()
    monkeypatch.undo()
    store = postgres.PostgresStore(PG_DSN, schema=schema)
    try:
        with pytest.raises(StoreError) as refused, store.transaction():
            pass
        assert refused.value.code == "schema_outdated"
        assert f"version 3; this signoff needs {len(MIGRATIONS)}" in str(refused.value)
        with pytest.raises(StoreError):
            store.get_request("req_x")
        assert store.migrate() == len(MIGRATIONS)
        assert store.get_request("req_x") is None
        with store.transaction() as tx:
            tx.append_audit("probe", at_us=1, request_id=None, actor=None, data={})
    finally:
        store.close()
        store.drop_schema()
    blank = postgres.PostgresStore(PG_DSN, schema="t_" + uuid.uuid4().hex[:12])
    try:
        with pytest.raises(StoreError) as never:
            blank.list_requests()
        assert never.value.code == "schema_outdated" and "version 0" in str(never.value)
    finally:
        blank.close()
        blank.drop_schema()


def test_a_batch_of_events_continues_the_chain(store: Store) -> None:
    with store.transaction() as tx:
        tx.append_audit("first", at_us=1, request_id=None, actor="a", data={"n": 0})
    with store.transaction() as tx:
        tx.append_audits([("call.allowed", 2 + n, "agent", {"n": n, "f": 1.5, "t": "é"})
                          for n in range(5)])
        tx.append_audit("after", at_us=9, request_id=None, actor=None, data={})
    with store.transaction() as tx:
        tx.append_audits([])
        tx.append_audits([("call.denied", 10, None, {})])
    events = list(store.audit_events())
    assert [e.kind for e in events] == ["first", *["call.allowed"] * 5, "after", "call.denied"]
    assert [e.index for e in events] == list(range(1, 9))
    assert [json.loads(e.data)["n"] for e in events[1:6]] == [0, 1, 2, 3, 4]
    assert store.verify_audit().ok
    assert store.audit_head() == (8, events[-1].hash)
