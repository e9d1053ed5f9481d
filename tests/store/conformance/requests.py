"""Requests and decisions: every field round trips, compare-and-set, claims and their
fencing tokens, and a transaction that fails writes nothing."""

from __future__ import annotations

import pytest

from signoff import audit
from signoff.errors import Conflict
from signoff.identity import Identity
from signoff.kernel import lifecycle
from signoff.model import (
    ApproveScope,
    DecisionKind,
    Grant,
    GrantScope,
    Rejection,
    RequestStatus,
)
from signoff.store.base import Store
from signoff.store.schema import MIGRATIONS

from .harness import Base, Harness, decision, full_request, insert, make_request


class RequestsContract(Base):
    """Requests, decisions, claims, rollback."""

    def test_migrate_is_idempotent_and_records_versions(self, store: Store,
                                                        harness: Harness) -> None:
        assert store.migrate() == len(MIGRATIONS)
        insert(store, make_request())
        assert store.migrate() == len(MIGRATIONS)  # again: nothing re-applied, nothing lost
        with harness.raw(store) as conn:
            rows = conn.execute("SELECT version, name FROM signoff_migrations "
                                "ORDER BY version").fetchall()
            assert [tuple(r) for r in rows] == [(i + 1, m.name) for i, m in enumerate(MIGRATIONS)]
            assert conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 1
            assert conn.execute("SELECT COUNT(*) FROM audit_head").fetchone()[0] == 1

    def test_request_round_trips_every_field_exactly(self, store: Store) -> None:
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

    def test_request_defaults_round_trip(self, store: Store) -> None:
        request = make_request(thread_id=None)
        insert(store, request)
        assert store.get_request(request.id) == request

    def test_duplicate_request_is_a_conflict_and_writes_nothing(self, store: Store) -> None:
        request = insert(store, make_request())
        clash = make_request(call_id=request.call_id, thread_id=request.thread_id)
        with pytest.raises(Conflict) as caught, store.transaction() as tx:
            tx.append_audit("request.created", at_us=1, request_id=clash.id, actor=None, data={})
            tx.insert_request(clash)
        assert caught.value.code == "unique_violation"
        assert store.get_request(clash.id) is None
        assert list(store.audit_events()) == []

    def test_update_request_is_a_compare_and_set(self, store: Store) -> None:
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

    def test_requests_in_approved_ids_and_list_filters(self, store: Store) -> None:
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

    def test_decisions_round_trip_in_time_order(self, store: Store) -> None:
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

    def test_one_approval_per_approver_and_hash(self, store: Store,
                                                refused: tuple[type[BaseException], ...]) -> None:
        request = insert(store, make_request())
        with store.transaction() as tx:
            tx.insert_decision(decision(request.id, "alice", 1.0))
        with pytest.raises((Conflict, *refused)), store.transaction() as tx:
            tx.insert_decision(decision(request.id, "alice", 2.0))
        assert len(store.decisions(request.id)) == 1

    def test_a_claim_token_is_its_audit_index_and_increases(self, store: Store) -> None:
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

    def test_rollback_on_exception_leaves_nothing(self, store: Store) -> None:
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

    def test_a_receipt_is_kept_with_its_transaction_or_not_at_all(self, store: Store) -> None:
        request = insert(store, make_request())
        assert store.receipt(request.id) is None
        with pytest.raises(RuntimeError, match="boom"), store.transaction() as tx:
            tx.put_receipt(request.id, "rolled.back.jws", kid="k1", at=1.0)
            raise RuntimeError("boom")
        assert store.receipt(request.id) is None
        token = "eyJ." + "x" * 2000 + ".sig"  # a receipt of many approvals: text, as sent
        with store.transaction() as tx:
            tx.put_receipt(request.id, token, kid="k1", at=2.0)
            assert tx.receipt_of(request.id) == token  # read back in the same transaction
        assert store.receipt(request.id) == token
        with pytest.raises(Conflict), store.transaction() as tx:  # one receipt per request
            tx.put_receipt(request.id, "second.receipt.jws", kid="k2", at=3.0)
        assert store.receipt(request.id) == token

    def test_a_failed_statement_rolls_back_the_whole_transaction(self, store: Store,
                                                                 refused: tuple[type[BaseException],
                                                                 ...]) -> None:
        existing = insert(store, make_request())
        fresh = make_request()
        with pytest.raises((Conflict, *refused)), store.transaction() as tx:
            tx.insert_request(fresh)
            tx.append_audit("x", at_us=1, request_id=fresh.id, actor=None, data={})
            tx.insert_request(existing)  # primary key clash
        assert store.get_request(fresh.id) is None
        assert list(store.audit_events()) == []
