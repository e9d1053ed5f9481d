"""PostgreSQL wake-ups come from triggers (schema migration 4): every audited request event
NOTIFYs its request id, every write to thread memory ``':memory'``, on the channel the
store listens to — also when the tables live in ``public`` (``schema=None``)."""

from __future__ import annotations

import time

import psycopg
import pytest
from psycopg import sql

from kit import PG_DSN, twin_store, until
from signoff.model import Grant, GrantScope, Rejection
from signoff.store.base import Store
from signoff.store.postgres import CLOSING_NOTICE, MEMORY_NOTICE, PostgresStore, channel_for
from signoff.store.schema import _CHANNEL


def _listener(store: Store) -> psycopg.Connection[tuple[object, ...]]:
    conn = psycopg.connect(PG_DSN, autocommit=True)
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel_for(store.schema))))  # type: ignore[attr-defined]
    return conn


def _heard(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    return [n.payload for n in conn.notifies(timeout=0.5, stop_after=16)]


@pytest.mark.parametrize("schema", ["public", "t_0123abcd", "Odd Schema\"Name", "é"])
def test_the_triggers_name_the_channel_as_python_does(postgres_store: Store,
                                                      schema: str) -> None:
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        row = conn.execute(f"SELECT {_CHANNEL.replace('TG_TABLE_SCHEMA', '%s::text')}",
                           (schema,) * _CHANNEL.count("TG_TABLE_SCHEMA")).fetchone()
    assert row is not None and row[0] == channel_for(schema)


@pytest.mark.slow
def test_request_events_and_memory_writes_notify(postgres_store: Store) -> None:
    store = postgres_store
    listener = _listener(store)
    try:
        with store.transaction() as tx:
            tx.append_audit("request.created", at_us=1, request_id="req_a", actor="a", data={})
            tx.append_audit("request.approved", at_us=2, request_id="req_a", actor="a", data={})
            tx.append_audit("call.allowed", at_us=3, request_id=None, actor="a", data={})
        assert _heard(listener) == ["req_a"]  # one per transaction and payload, none for None

        with store.transaction() as tx:
            tx.append_audit("call.allowed", at_us=4, request_id=None, actor="a", data={})
        assert _heard(listener) == []

        with store.transaction() as tx:
            tx.insert_grant(Grant(id="g1", scope=GrantScope.THREAD, tool="t", args={},
                                  thread_id="th"), at=1.0, request_id=None)
        assert _heard(listener) == [MEMORY_NOTICE]
        with store.transaction() as tx:
            tx.use_grant("g1")
        assert _heard(listener) == [MEMORY_NOTICE]
        with store.transaction() as tx:
            tx.put_rejection(Rejection(thread_id="th", tool="t", args_hash="sha256:x",
                                       reason="no"), at=1.0)
        assert _heard(listener) == [MEMORY_NOTICE]
        with store.transaction() as tx:
            tx.set_thread_mode("th", "full", at=1.0)
        assert _heard(listener) == [MEMORY_NOTICE]

        with pytest.raises(RuntimeError), store.transaction() as tx:
            tx.append_audit("request.created", at_us=5, request_id="req_b", actor="a", data={})
            raise RuntimeError("rolled back")
        assert _heard(listener) == []  # a rolled-back event wakes nobody
    finally:
        listener.close()


def test_a_store_in_the_public_schema_wakes_another_promptly(postgres_database: str
                                                             ) -> None:
    waiter = PostgresStore(postgres_database, setup=True)
    writer = PostgresStore(postgres_database)
    try:
        waiter.change_token()
        time.sleep(0.3)  # the listener's start-up wake-up
        since = waiter.change_token()
        started = time.monotonic()
        with writer.transaction() as tx:
            tx.append_audit("request.created", at_us=1, request_id="req_p", actor="a", data={})
        waiter.wait("req_p", timeout=5.0, since=since)
        # Without the NOTIFY the waiter would sleep its whole 1 s re-read slice.
        assert time.monotonic() - started < 0.5
        assert waiter.channel == "signoff_requests"
    finally:
        writer.close()
        waiter.close()


def test_closing_wakes_its_own_listener_and_no_one_else(postgres_store: Store) -> None:
    """A closing store tells its listener with a notice on its channel, which every other
    store on that schema hears: they must not take it for a change."""
    other = twin_store(postgres_store)
    closing = twin_store(postgres_store)
    listener = _listener(postgres_store)
    try:
        for store in (other, closing):
            store.change_token()  # both listening
        assert until(lambda: all(s._listening for s in (other, closing)))  # type: ignore[attr-defined]
        before = (other.change_token(), other.memory_token(), other.accounts_token())
        closing.close()
        assert not closing._listener.is_alive()  # type: ignore[attr-defined]
        assert _heard(listener) == [CLOSING_NOTICE]
        other.wait("req_x", timeout=0.3, since=before[0])
        assert (other.change_token(), other.memory_token(), other.accounts_token()) == before
        # ... and still hears what changes after it: a request event from a third store
        with postgres_store.transaction() as tx:
            tx.append_audit("request.created", at_us=1, request_id="req_y", actor="a",
                            data={})
        assert until(lambda: other.change_token() != before[0])
    finally:
        listener.close()
        other.close()

