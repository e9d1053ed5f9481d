"""``Tx.record_audit``: an event whose number nobody needs may be written with the
transaction's next events (PostgreSQL: one statement), always in the order recorded."""

from __future__ import annotations

import pytest

from signoff.store.base import Store


def _kinds(store: Store) -> list[str]:
    return [e.kind for e in store.audit_events()]


def test_recorded_events_keep_their_order_among_appended_ones(store: Store) -> None:
    with store.transaction() as tx:
        tx.record_audit("a", at_us=1, request_id=None, actor="t", data={})
        tx.record_audit("b", at_us=2, request_id=None, actor="t", data={})
        first = tx.append_audit("c", at_us=3, request_id=None, actor="t", data={})
        tx.record_audit("d", at_us=4, request_id=None, actor="t", data={})
        tx.append_audits([("e", 5, "t", {}), ("f", 6, "t", {})])
        tx.record_audit("g", at_us=7, request_id=None, actor="t", data={"last": True})
    with store.transaction() as tx:
        second = tx.append_audit("h", at_us=8, request_id=None, actor="t", data={})
    assert second > first
    assert _kinds(store) == list("abcdefgh")
    assert [e.at_us for e in store.audit_events()] == list(range(1, 9))
    assert store.verify_audit().ok


def test_a_recorded_event_of_a_failed_transaction_is_not_written(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.record_audit("lost", at_us=1, request_id=None, actor="t", data={})
        raise RuntimeError("the body failed")
    with store.transaction() as tx:
        tx.record_audit("kept", at_us=2, request_id=None, actor="t", data={})
    assert _kinds(store) == ["kept"]
    assert store.verify_audit().ok
