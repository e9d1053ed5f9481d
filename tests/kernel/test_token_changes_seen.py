"""A change to a token or its user is seen in time, though a token checked a moment ago
is answered from memory (``Gate.remembered_identity``: the server spares each request a
thread hop and a read). Every change made through the gate forgets at once; a change
made elsewhere is seen within ``TOKEN_FRESH`` — on PostgreSQL when its notice arrives, the
memory then lasting up to ``TOKEN_HEARD`` while nothing is heard, and ``TOKEN_FRESH`` only
while the listener is cut off."""

from __future__ import annotations

import time
from pathlib import Path
from typing import NoReturn

import psycopg
import pytest
from psycopg import sql

from kit import twin_store, until
from signoff.errors import Unauthenticated
from signoff.kernel import accounts
from signoff.kernel.gate import Gate
from signoff.policy import Policy
from signoff.store.base import Store


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def gate(policy: Policy, store: Store) -> Gate:
    return Gate(policy, store, clock=Clock())


def test_a_checked_token_is_remembered_and_nothing_else_is(gate: Gate) -> None:
    _, token = gate.add_user("ann", roles=["ops"])
    assert gate.remembered_identity(token) is None  # never checked: ask the store
    assert gate.authenticate(token).name == "ann"
    remembered = gate.remembered_identity(token)
    assert remembered is not None and remembered.name == "ann" and remembered.roles == ("ops",)
    assert gate.remembered_identity("not-a-token") is None
    assert gate.remembered_identity(None) is None
    with pytest.raises(Unauthenticated):
        gate.authenticate("not-a-token")
    assert gate.remembered_identity("not-a-token") is None  # refusals are never remembered


def test_memory_lasts_token_fresh_seconds_where_changes_are_not_heard(
        policy: Policy, sqlite_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accounts, "TOKEN_FRESH", 0.05)
    gate = Gate(policy, sqlite_store)
    assert sqlite_store.accounts_token() is None  # SQLite: another process's write is unheard
    _, token = gate.add_user("ann")
    gate.authenticate(token)
    assert gate.remembered_identity(token) is not None
    time.sleep(0.06)
    assert gate.remembered_identity(token) is None


@pytest.mark.parametrize("change", ["disable", "remove", "rotate", "roles"])
def test_a_change_through_the_gate_is_seen_at_once(gate: Gate, change: str) -> None:
    gate.add_user("boss", roles=["admin"])
    _, token = gate.add_user("ann", roles=["ops"])
    gate.authenticate(token)
    {"disable": lambda: gate.disable_user("ann"), "remove": lambda: gate.remove_user("ann"),
     "rotate": lambda: gate.rotate_token("ann"),
     "roles": lambda: gate.set_roles("ann", ["dev"])}[change]()
    assert gate.remembered_identity(token) is None
    if change == "roles":
        assert gate.authenticate(token).roles == ("dev",)
    else:
        with pytest.raises(Unauthenticated):
            gate.authenticate(token)


def test_a_change_made_elsewhere_is_seen_within_token_fresh(policy: Policy, store: Store,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setattr(accounts, "TOKEN_FRESH", 0.2)
    here = Gate(policy, store)
    other_store = twin_store(store)
    try:
        there = Gate(policy, other_store)
        _, token = here.add_user("ann")
        here.authenticate(token)
        there.disable_user("ann")  # another server, or the CLI
        started = time.monotonic()  # after the check above: its memory is older than this
        while True:
            asked = time.monotonic() - started
            if here.remembered_identity(token) is None:
                break
            assert asked <= 0.2  # answered from memory only while it is fresh
            time.sleep(0.01)
        with pytest.raises(Unauthenticated) as refused:
            here.authenticate(token)
        assert refused.value.code == "identity_disabled"
    finally:
        other_store.close()


def test_an_expired_token_is_not_answered_from_memory(gate: Gate) -> None:
    _, token = gate.add_user("ann", expires_in=60)
    gate.authenticate(token)
    assert gate.remembered_identity(token) is not None
    gate.clock.now += 61  # type: ignore[attr-defined]
    assert gate.remembered_identity(token) is None
    with pytest.raises(Unauthenticated) as refused:
        gate.authenticate(token)
    assert refused.value.code == "token_expired"


# ---- PostgreSQL: account changes are heard -------------------------------------------------


_connect = psycopg.connect  # the test's own, whatever a test does to the module's


def _add_user_heard(store: Store, gate: Gate, name: str) -> str:
    """Add a user and wait until this store has heard its own write: what it hears after
    that is someone else's change."""
    assert until(lambda: store.accounts_token() is not None, 5), "the listener never listened"
    before = store.accounts_token()
    _, token = gate.add_user(name)
    assert until(lambda: store.accounts_token() != before, 5), "the INSERT was never heard"
    return token


def _sql(store: Store, statement: str) -> None:
    """A write behind every gate's back, as an operator's psql would make it."""
    with _connect(store.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        conn.execute(sql.SQL("SET search_path TO {}").format(
            sql.Identifier(store.schema)))  # type: ignore[attr-defined]
        conn.execute(statement.encode())


@pytest.fixture
def heard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory past ``TOKEN_FRESH`` is what is under test: make it short, and the bound on
    what is heard long, so that only a notice (or its absence) decides."""
    monkeypatch.setattr(accounts, "TOKEN_FRESH", 0.05)
    monkeypatch.setattr(accounts, "TOKEN_HEARD", 30.0)


@pytest.mark.usefixtures("heard")
def test_postgres_remembers_a_token_past_token_fresh_until_a_change_is_heard(
        policy: Policy, postgres_store: Store) -> None:
    here = Gate(policy, postgres_store)
    other_store = twin_store(postgres_store)
    try:
        token = _add_user_heard(postgres_store, here, "ann")
        here.authenticate(token)
        time.sleep(0.1)  # past TOKEN_FRESH, and nothing changed
        assert here.remembered_identity(token) is not None
        Gate(policy, other_store).disable_user("ann")  # another server, or the CLI
        assert until(lambda: here.remembered_identity(token) is None, 5)
        with pytest.raises(Unauthenticated) as refused:
            here.authenticate(token)
        assert refused.value.code == "identity_disabled"
    finally:
        other_store.close()


@pytest.mark.usefixtures("heard")
@pytest.mark.parametrize("change", [
    "UPDATE users SET disabled = 1 WHERE name = 'ann'",
    "UPDATE users SET roles = '[\"dev\"]' WHERE name = 'ann'",
    "UPDATE users SET token_hash = 'x' WHERE name = 'ann'",
    "DELETE FROM users WHERE name = 'ann'",
    "TRUNCATE users CASCADE",
])
def test_postgres_hears_a_change_written_behind_every_gate(policy: Policy, postgres_store: Store,
                                                          change: str) -> None:
    gate = Gate(policy, postgres_store)
    token = _add_user_heard(postgres_store, gate, "ann")
    gate.authenticate(token)
    time.sleep(0.1)
    assert gate.remembered_identity(token) is not None
    _sql(postgres_store, change)
    assert until(lambda: gate.remembered_identity(token) is None, 5)
    if "roles" in change:
        assert gate.authenticate(token).roles == ("dev",)
    else:
        with pytest.raises(Unauthenticated):
            gate.authenticate(token)


@pytest.mark.usefixtures("heard")
def test_postgres_memory_ends_when_the_listener_is_cut_off(policy: Policy, postgres_store: Store,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A change made while the listener is gone is never heard: the memory may not outlive
    ``TOKEN_FRESH`` while it is gone, and its reconnection forgets what was read before."""
    gate = Gate(policy, postgres_store)
    token = _add_user_heard(postgres_store, gate, "ann")
    gate.authenticate(token)
    time.sleep(0.1)
    assert gate.remembered_identity(token) is not None

    def refused(*args: object, **kwargs: object) -> NoReturn:
        raise psycopg.OperationalError("the network is down (test)")

    monkeypatch.setattr(psycopg, "connect", refused)  # the listener cannot come back ...
    channel = postgres_store.channel  # type: ignore[attr-defined]
    with _connect(postgres_store.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        killed = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE query = %s", (f'LISTEN "{channel}"',)).fetchall()
    assert killed == [(True,)]
    _sql(postgres_store, "UPDATE users SET disabled = 1 WHERE name = 'ann'")  # unheard
    assert until(lambda: gate.remembered_identity(token) is None, 5)
    monkeypatch.undo()  # ... until now
    assert until(lambda: postgres_store.accounts_token() is not None, 5)
    assert gate.remembered_identity(token) is None  # read before the reconnection: forgotten
    with pytest.raises(Unauthenticated) as denied:
        gate.authenticate(token)
    assert denied.value.code == "identity_disabled"
    # Listening again: a token checked now is remembered past TOKEN_FRESH again.
    _sql(postgres_store, "UPDATE users SET disabled = 0 WHERE name = 'ann'")
    time.sleep(0.2)  # the UPDATE's notice, heard
    gate.authenticate(token)
    time.sleep(0.1)
    assert gate.remembered_identity(token) is not None
