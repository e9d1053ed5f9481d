"""Writes a transaction keeps back are still written all or none, in order, with typed
errors: to spare round trips, a PostgreSQL transaction keeps back the writes nobody waits on
and sends them with its next statement or its commit (``signoff.store.pgbatch``).

Round trips are counted on the wire's waits: every time this thread's psycopg connection
waits on its socket for a statement's answer, or for a pipeline's at its synchronisation
point (a ``Connection.wait`` whose generator waits for I/O at least once). A statement
queued in a pipeline is only sent, and a wait that needs no I/O, such as the pool's commit
of an idle connection, sends nothing: neither is a round trip. The sealer's and the
listener's threads are not counted.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kit import round_trips, statements
from signoff.canonical import args_hash, canonical_text
from signoff.errors import Conflict, InvalidInput
from signoff.kernel.gate import Gate
from signoff.model import (
    ApprovalRequest,
    Decision,
    DecisionKind,
    DecisionRecord,
    RequestStatus,
    Risk,
    RunContext,
    ToolCall,
)
from signoff.policy import Policy
from signoff.store.base import Store
from signoff.store.pgbatch import Batch, folded, guarded


def request(**changes: Any) -> ApprovalRequest:
    args = {"command": "ls -la"}
    fields: dict[str, Any] = {
        "id": "req_" + uuid.uuid4().hex, "call_id": "call_" + uuid.uuid4().hex[:8],
        "tool": "execute", "args": canonical_text(args), "args_hash": args_hash(args),
        "status": RequestStatus.PENDING, "risk": Risk.MEDIUM, "summary": "ls",
        "policy_version": "kernel-1", "created_at": 1_700_000_000.5,
        "updated_at": 1_700_000_000.5, "thread_id": "t-" + uuid.uuid4().hex[:6]}
    fields.update(changes)
    return ApprovalRequest(**fields)


def decision(request_id: str, approver: str = "alice") -> DecisionRecord:
    return DecisionRecord(id="dec_" + uuid.uuid4().hex, request_id=request_id,
                          kind=DecisionKind.APPROVE, approver=approver,
                          created_at=1_700_000_001.0, args_hash="sha256:aa")


def stored(store: Store, request_id: str) -> ApprovalRequest | None:
    return store.get_request(request_id)


# ---- the batch itself (PostgreSQL) -------------------------------------------------------------


def test_writes_travel_with_the_next_read_and_the_commit(postgres_store: Store) -> None:
    first, second = request(), request()
    with postgres_store.transaction():  # warm the pool: a new connection talks first
        pass
    with round_trips() as counted, postgres_store.transaction() as tx:
        tx.insert_request(first)  # kept back, with the BEGIN
        tx.insert_request(second)
        tx.record_audit("one", at_us=1, request_id=first.id, actor="t", data={})
        assert counted[0] == 0  # nothing has gone yet
        seen = tx.get_request(first.id)  # BEGIN, both inserts and this read: one message
        assert seen is not None and seen.id == first.id  # it reads its own writes
        assert counted[0] == 1
        tx.insert_decision(decision(first.id))
    assert counted[0] == 2  # the decision, the kept event, COMMIT: the second message
    assert stored(postgres_store, second.id) is not None
    assert [d.request_id for d in postgres_store.decisions(first.id)] == [first.id]
    assert [e.kind for e in postgres_store.audit_events()] == ["one"]


def test_a_transaction_that_does_nothing_costs_no_round_trip(postgres_store: Store) -> None:
    with postgres_store.transaction():
        pass
    with round_trips() as counted, postgres_store.transaction():
        pass
    assert counted[0] == 0


def test_a_kept_back_write_that_fails_fails_the_whole_transaction(store: Store) -> None:
    """A duplicate insert kept back until the commit: the commit fails with the same typed
    conflict as an insert sent at once, and nothing of the transaction stays."""
    existing = request()
    with store.transaction() as tx:
        tx.insert_request(existing)
    fresh = request()
    with pytest.raises(Conflict) as refused, store.transaction() as tx:
        tx.insert_request(fresh)
        tx.insert_decision(decision(existing.id))
        tx.insert_request(existing)  # a duplicate id
        tx.record_audit("lost", at_us=1, request_id=None, actor="t", data={})
    assert refused.value.code == "unique_violation"
    assert stored(store, fresh.id) is None
    assert store.decisions(existing.id) == []
    assert list(store.audit_events()) == []
    with store.transaction() as tx:  # the connection went back to the pool clean
        tx.insert_request(fresh)
    assert stored(store, fresh.id) is not None


def _bad_value_writes_nothing(store: Store, bad: str) -> None:
    good = request()
    with pytest.raises(InvalidInput), store.transaction() as tx:
        tx.insert_request(good)
        tx.record_audit("never", at_us=1, request_id=None, actor="t", data={})
        tx.insert_request(request(summary=bad))
    assert stored(store, good.id) is None
    assert list(store.audit_events()) == []


def test_a_lone_surrogate_in_a_kept_back_write_is_typed_and_writes_nothing(
        store: Store) -> None:
    _bad_value_writes_nothing(store, "lone \ud800 surrogate")


def test_a_nul_in_a_kept_back_write_is_typed_and_writes_nothing(postgres_store: Store) -> None:
    """PostgreSQL refuses a NUL in text (SQLite stores it; ``signoff.inputs`` refuses it
    before any store on every surface)."""
    _bad_value_writes_nothing(postgres_store, "a\x00b")


def test_a_failed_pipeline_leaves_no_statement_half_prepared(postgres_store: Store) -> None:
    """psycopg starts preparing a statement the sixth time a connection sends it. In a
    pipeline, one queued behind a statement that fails is skipped by the server: the
    connection must not go on naming a prepared statement that was never made — and the
    failure is the statement's own error, not the skipped ones'."""
    # Fails when it runs, after a pause: the rest is queued long before its answer.
    slow_failure = "SELECT 1 / (%s + (random() < 2)::int - 2) FROM pg_sleep(0.05)"
    behind = "SELECT %s::int + 1"
    with postgres_store.pool.connection() as conn:  # type: ignore[attr-defined]
        # A ROLLBACK this connection has sent before: psycopg looks at a ROLLBACK's result
        # (and forgets what it prepared) only the first time.
        batch = Batch(conn)
        with pytest.raises(psycopg.errors.DivisionByZero):
            batch.execute(slow_failure, (1,))
        batch.rollback()
        for n in range(5):  # sent five times: psycopg prepares it at the next
            batch = Batch(conn)
            batch.defer(behind, (n,))
            batch.commit()
        batch = Batch(conn)
        batch.defer(slow_failure, (1,))
        batch.defer(behind, (5,))  # prepared, but behind the failure: never made
        with pytest.raises(psycopg.errors.DivisionByZero):
            batch.commit()
        batch.rollback()
        for n in range(3):
            batch = Batch(conn)
            batch.defer(behind, (n,))
            assert batch.execute(behind, (n,), commit=True).fetchone() == (n + 1,)


# ---- writes folded into one statement ------------------------------------------------------------


INSERT_A = ("INSERT INTO a (x, y) VALUES (%s, %s)", (1, 2))
INSERT_B = ("INSERT INTO b (x) VALUES (%s)", (3,))


def test_one_write_is_itself() -> None:
    assert folded([INSERT_A]) == INSERT_A
    assert folded([]) is None


def test_inserts_into_tables_of_their_own_fold_in_order() -> None:
    assert folded([INSERT_A, INSERT_B]) == (
        "WITH w0 AS (INSERT INTO a (x, y) VALUES (%s, %s)) INSERT INTO b (x) VALUES (%s)",
        [1, 2, 3])


def test_a_guarded_write_folds_and_its_guard_answers_for_the_statement() -> None:
    move, what = guarded("UPDATE c SET z = %s WHERE id = %s", "it moved")
    assert folded([INSERT_A, (move, (7, "id-1", what)), INSERT_B]) == (
        "WITH w0 AS (INSERT INTO a (x, y) VALUES (%s, %s)), moved AS (UPDATE c SET z = %s "
        "WHERE id = %s RETURNING 1), w2 AS (INSERT INTO b (x) VALUES (%s)) "
        "SELECT signoff_expect_one(COUNT(*), %s) FROM moved", [1, 2, 7, "id-1", 3, "it moved"])


def test_a_check_folds_as_the_statement_and_its_parameters_go_last() -> None:
    check = ("SELECT signoff_expect_one(CASE WHEN EXISTS (SELECT 1 FROM c WHERE id = %s) "
             "THEN 0 ELSE 1 END, %s)", ("t-1", "has memory"))
    assert folded([check, INSERT_A, INSERT_B]) == (
        "WITH w1 AS (INSERT INTO a (x, y) VALUES (%s, %s)), w2 AS (INSERT INTO b (x) VALUES "
        "(%s)) SELECT signoff_expect_one(CASE WHEN EXISTS (SELECT 1 FROM c WHERE id = %s) "
        "THEN 0 ELSE 1 END, %s)", [1, 2, 3, "t-1", "has memory"])
    reads_b = ("SELECT signoff_expect_one(CASE WHEN EXISTS (SELECT 1 FROM b) THEN 0 ELSE 1 END, "
               "%s)", ("m",))
    assert folded([reads_b, INSERT_A, INSERT_B]) is None  # it would not see b's new row


@pytest.mark.parametrize("writes", [
    pytest.param([INSERT_A, ("INSERT INTO a (x) VALUES (%s)", (5,))], id="one table twice"),
    pytest.param([INSERT_A, ("INSERT INTO b (x) SELECT x FROM a", ())], id="reads another's table"),
    pytest.param([INSERT_A, ("UPDATE b SET x = 1", ())], id="an unguarded update"),
    pytest.param([INSERT_A, ("DELETE FROM b", ())], id="a delete"),
    pytest.param([INSERT_A, ("INSERT INTO b (x) VALUES (1) RETURNING x", ())], id="returning"),
    pytest.param([INSERT_A, ("SELECT 1", ())], id="a read"),
    pytest.param([(guarded("UPDATE b SET x = 1", "m")[0], ("m",)),
                  (guarded("UPDATE c SET x = 1", "m")[0], ("m",))], id="two guards"),
])
def test_writes_that_could_see_each_other_do_not_fold(writes: list[Any]) -> None:
    assert folded(writes) is None


def test_a_transaction_of_writes_alone_is_one_statement(postgres_store: Store) -> None:
    """A request, a decision on it (a foreign key between the two) and an event: one
    statement in PostgreSQL's implicit transaction — no BEGIN, no COMMIT."""
    row = request()
    with postgres_store.transaction():
        pass
    with round_trips() as counted, statements() as sent, postgres_store.transaction() as tx:
        tx.insert_request(row)
        tx.insert_decision(decision(row.id))
        tx.record_audit("one", at_us=1, request_id=row.id, actor="t", data={})
    assert counted[0] == 1 and len(sent) == 1 and sent[0].startswith("WITH w0 AS (INSERT")
    assert stored(postgres_store, row.id) is not None
    assert [d.request_id for d in postgres_store.decisions(row.id)] == [row.id]
    assert [e.kind for e in postgres_store.audit_events()] == ["one"]


def test_a_folded_compare_and_set_that_moves_nothing_writes_nothing(
        postgres_store: Store) -> None:
    """The decision's shape (a decision, the move of the held row, its events) folded into
    one statement: a move that matches no row raises inside it, and nothing stays."""
    held = request()
    with postgres_store.transaction() as tx:
        tx.insert_request(held)
    with pytest.raises(Conflict) as refused, statements() as sent, \
            postgres_store.transaction() as tx:
        locked = tx.get_request(held.id, lock=True)
        assert locked is not None
        tx.insert_decision(decision(held.id))
        stale = dataclasses.replace(locked, version=locked.version + 5)
        tx.update_request(stale, status=RequestStatus.APPROVED, updated_at=2.0)
        tx.record_audit("lost", at_us=1, request_id=held.id, actor="t", data={})
    assert refused.value.code == "changed_underneath"
    assert any(text.startswith("WITH w0 AS (INSERT INTO decisions") for text in sent)
    after = stored(postgres_store, held.id)
    assert after is not None and after.version == held.version
    assert postgres_store.decisions(held.id) == []
    assert list(postgres_store.audit_events()) == []


def test_a_kept_back_compare_and_set_that_moves_nothing_rolls_everything_back(
        postgres_store: Store) -> None:
    """A compare-and-set on a held row travels with the commit; should it ever match no row
    (here: a second one on the stale version), PostgreSQL raises before the COMMIT."""
    held = request()
    with postgres_store.transaction() as tx:
        tx.insert_request(held)
    with pytest.raises(Conflict) as refused, postgres_store.transaction() as tx:
        locked = tx.get_request(held.id, lock=True)
        assert locked is not None
        moved = tx.update_request(locked, status=RequestStatus.APPROVED, updated_at=2.0)
        assert moved is not None and moved.version == locked.version + 1
        tx.insert_decision(decision(held.id))
        tx.update_request(locked, status=RequestStatus.REJECTED, updated_at=3.0)  # stale
    assert refused.value.code == "changed_underneath"
    after = stored(postgres_store, held.id)
    assert after is not None
    assert (after.status, after.version) == (RequestStatus.PENDING, held.version)
    assert postgres_store.decisions(held.id) == []


def test_a_compare_and_set_on_a_row_not_held_answers_at_once(store: Store) -> None:
    """Without the row held, the caller learns at once that the row moved (``None``)."""
    row = request()
    with store.transaction() as tx:
        tx.insert_request(row)
    with store.transaction() as tx:
        assert tx.update_request(row, updated_at=2.0) is not None
    with store.transaction() as tx:
        assert tx.update_request(row, updated_at=3.0) is None  # the old version
    after = stored(store, row.id)
    assert after is not None and (after.version, after.updated_at) == (row.version + 1, 2.0)


def _approved(store: Store) -> ApprovalRequest:
    row = request(status=RequestStatus.APPROVED)
    with store.transaction() as tx:
        tx.insert_request(row)
    return row


def _claim_event(row: ApprovalRequest) -> tuple[str, int, str, dict[str, Any]]:
    return "request.executing", 5, "worker", {"from": "approved", "to": "executing"}


def test_a_claim_commits_with_its_statement_and_nothing_may_follow(
        postgres_store: Store) -> None:
    row = _approved(postgres_store)
    with postgres_store.transaction() as tx:
        assert tx.hold_request(row) is not None
        with round_trips() as counted:
            token = tx.claim_request(row, event=_claim_event(row), commit=True,
                                     status=RequestStatus.EXECUTING, updated_at=5.0,
                                     lease_until=60.0, executor="worker")
        assert counted[0] == 1  # the claim and its COMMIT, one message
        with pytest.raises(RuntimeError, match="ended"):
            tx.insert_decision(decision(row.id))
    after = stored(postgres_store, row.id)
    assert after is not None and after.status is RequestStatus.EXECUTING
    assert after.fencing_token == token
    assert postgres_store.decisions(row.id) == []
    assert [e.kind for e in postgres_store.audit_events()] == ["request.executing"]


def test_a_committing_claim_on_a_stale_row_writes_nothing(postgres_store: Store) -> None:
    row = _approved(postgres_store)
    with postgres_store.transaction() as tx:
        tx.update_request(row, updated_at=9.0)  # the row moves on (version + 1)
    with pytest.raises(Conflict), postgres_store.transaction() as tx:
        tx.claim_request(row, event=_claim_event(row), commit=True,
                         status=RequestStatus.EXECUTING, updated_at=5.0, lease_until=60.0,
                         executor="worker")
    after = stored(postgres_store, row.id)
    assert after is not None and after.status is RequestStatus.APPROVED
    assert list(postgres_store.audit_events()) == []


def test_a_claim_on_a_stale_row_is_none_and_rolls_back(store: Store) -> None:
    row = _approved(store)
    with store.transaction() as tx:
        tx.update_request(row, updated_at=9.0)
    with pytest.raises(LookupError), store.transaction() as tx:
        token = tx.claim_request(row, event=_claim_event(row), status=RequestStatus.EXECUTING,
                                 updated_at=5.0, lease_until=60.0, executor="worker")
        assert token is None
        raise LookupError("the caller gives up, as lifecycle.claim does")
    assert list(store.audit_events()) == []


# ---- a run's end, one statement --------------------------------------------------------------


def _executing(store: Store) -> tuple[ApprovalRequest, int]:
    row = _approved(store)
    with store.transaction() as tx:
        token = tx.claim_request(row, event=_claim_event(row), status=RequestStatus.EXECUTING,
                                 updated_at=5.0, lease_until=60.0, executor="worker")
    assert token is not None
    return row, token


def test_finishing_writes_the_move_and_its_event_or_neither(store: Store) -> None:
    row, token = _executing(store)
    event = ("request.succeeded", 7, "worker", {"from": "executing", "to": "succeeded"})
    assert not store.finish_execution(row.id, token + 1, event=event,
                                      status=RequestStatus.SUCCEEDED, updated_at=7.0,
                                      result='"x"', error=None)  # not the holder's token
    assert [e.kind for e in store.audit_events()] == ["request.executing"]
    assert store.finish_execution(row.id, token, event=event, status=RequestStatus.SUCCEEDED,
                                  updated_at=7.0, result='"ok"', error=None)
    after = stored(store, row.id)
    assert after is not None and (after.status, after.result) == (RequestStatus.SUCCEEDED,
                                                                  '"ok"')
    assert [e.kind for e in store.audit_events()] == ["request.executing",
                                                       "request.succeeded"]
    assert not store.finish_execution(row.id, token, event=event,
                                      status=RequestStatus.SUCCEEDED, updated_at=8.0,
                                      result='"again"', error=None)  # done already
    assert len(list(store.audit_events())) == 2
    assert store.verify_audit().ok


def test_finishing_is_one_round_trip(postgres_store: Store) -> None:
    row, token = _executing(postgres_store)
    event = ("request.failed", 7, "worker", {"from": "executing", "to": "failed"})
    with round_trips() as counted:
        assert postgres_store.finish_execution(row.id, token, event=event,
                                               status=RequestStatus.FAILED, updated_at=7.0,
                                               result=None, error="boom")
    assert counted[0] == 1


def test_a_bad_value_at_the_finish_is_typed_and_writes_nothing(postgres_store: Store) -> None:
    store = postgres_store  # SQLite stores a NUL in TEXT (signoff.inputs refuses it first)
    row, token = _executing(store)
    event = ("request.failed", 7, "worker", {"from": "executing", "to": "failed"})
    with pytest.raises(InvalidInput):
        store.finish_execution(row.id, token, event=event, status=RequestStatus.FAILED,
                               updated_at=7.0, result=None, error="nul \x00 here")
    after = stored(store, row.id)
    assert after is not None and after.status is RequestStatus.EXECUTING
    assert [e.kind for e in store.audit_events()] == ["request.executing"]


# ---- the durable cycle's budget ------------------------------------------------------------------


def test_the_durable_cycle_on_postgresql_is_five_round_trips(
        postgres_store: Store, policy: Policy, tmp_path: Path) -> None:
    """propose 1 (the request with its event, the thread's memory required empty: one
    statement), decide 1 (the decision, the move and its events, the row required as this
    process wrote it: one statement), resume 3 (the row with its approvals; the claim,
    required as read, with its COMMIT; the result with its event). A decision in another
    process, which did not write the request, reads it and the approver first, without a
    lock or a transaction: 2 statements, and no BEGIN or COMMIT. The bench
    (bench/roundtrip_bench.py) says why round trips are the cost."""
    gate = Gate(policy, postgres_store)
    other = Gate(policy, postgres_store)  # another process: it knows no request
    alice, _ = gate.add_user("alice", roles=[])

    @gate.tool(name="execute")
    def execute(command: str) -> str:
        return f"ran {command}"

    counts: dict[str, list[int]] = {"propose": [], "decide": [], "resume": []}
    for n in range(4):  # the first cycle opens the pools' connections
        call = ToolCall(id=f"c{n}", name="execute", args={"command": "echo hi"})
        with round_trips() as counted:
            proposal = gate.propose(call, RunContext(thread_id=f"thread-{n}"))
        counts["propose"].append(counted[0])
        assert proposal.request is not None
        with round_trips() as counted, statements() as sent:
            (other if n == 3 else gate).decide(proposal.request.id, Decision.approve(),
                                               identity=alice)
        counts["decide"].append(counted[0])
        if n == 3:
            assert len(sent) == 2 and sent[0].startswith("SELECT"), sent
            assert "FOR UPDATE" not in sent[0] and "COMMIT" not in sent
            assert "BEGIN" not in sent
        with round_trips() as counted:
            outcome = gate.resume(proposal.request.id)
        counts["resume"].append(counted[0])
        assert outcome.result == "ran echo hi"
    assert {phase: runs[1:] for phase, runs in counts.items()} == {
        "propose": [1, 1, 1], "decide": [1, 1, 2], "resume": [3, 3, 3]}
    assert postgres_store.verify_audit().ok
