"""The audit chain: indexes without gaps, hashes that link, one chain whoever appends,
and a database that refuses to change what was written."""

from __future__ import annotations

import itertools
import json
import threading

import pytest

from signoff import audit
from signoff.store.base import Store

from .harness import Base, Harness, append, insert, make_request


class AuditContract(Base):
    """The audit chain."""

    @pytest.mark.slow
    def test_audit_chain_indexes_links_and_verifies(self, store: Store) -> None:
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

    def test_audit_chain_stays_a_chain_across_connections_and_rollbacks(self, store: Store) -> None:
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

    def test_racing_appends_from_two_stores_keep_one_chain(self, store: Store,
                                                           harness: Harness) -> None:
        """Two stores on one database (two processes, as far as each knows), four threads each:
        every store appends on its guess of the head, which the other keeps making stale. No
        append fails, none is lost, and the events form one chain."""
        twin = harness.twin(store)
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
    def test_database_refuses_audit_update_and_delete(self, store: Store, statement: str,
                                                      refused: tuple[type[BaseException], ...],
                                                      harness: Harness) -> None:
        append(store, 2)
        before = list(store.audit_events())
        # Through the store's own transaction …
        with pytest.raises(refused, match="append-only"), store.transaction() as tx:
            tx._exec(statement)  # type: ignore[attr-defined]
        # … and through a connection of our own.
        with harness.raw(store) as conn, pytest.raises(refused, match="append-only"):
            conn.execute(statement)
        assert list(store.audit_events()) == before
        assert audit.verify(store.audit_events()).ok

    def test_audit_events_paging(self, store: Store) -> None:
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

    def test_a_batch_of_events_continues_the_chain(self, store: Store) -> None:
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
