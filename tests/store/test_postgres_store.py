"""What PostgreSQL does its own way, beside the contract (``test_conformance``): other
transactions' rows skipped, ``TRUNCATE`` refused, notifications kept in their schema, and a
database behind its code refused."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import psycopg
import pytest
from conformance.harness import append, append_and_notify, insert, make_request, warm

from backdoor import raw
from signoff.model import RequestStatus
from signoff.store.base import Store
from signoff.store.schema import MIGRATIONS


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


def test_postgres_refuses_audit_truncate(postgres_store: Store) -> None:
    store = postgres_store
    append(store, 1)
    with raw(store) as conn, pytest.raises(psycopg.Error, match="append-only"):
        conn.execute("TRUNCATE audit")
    assert len(list(store.audit_events())) == 1


@pytest.mark.slow
def test_postgres_notifications_stay_in_their_schema(postgres_store: Store,
                                                     tmp_path: Any) -> None:
    store = postgres_store
    from kit import PG_DSN
    from signoff.store.postgres import PostgresStore

    neighbour = PostgresStore(PG_DSN, schema="t_" + uuid.uuid4().hex[:12], setup=True)
    try:
        warm(store)
        warm(neighbour)
        since = store.change_token()
        append_and_notify(neighbour, "req_n")
        started = time.monotonic()
        store.wait("req_n", timeout=0.4, since=since)
        assert time.monotonic() - started >= 0.35  # a neighbour's commit is not ours
    finally:
        neighbour.close()
        neighbour.drop_schema()


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
