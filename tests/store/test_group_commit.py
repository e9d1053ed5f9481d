"""SQLite's writers of one process commit in groups (``signoff.store.groupcommit``): fewer
fsyncs than transactions, nobody returns before its writes are durable, a failed body
leaves the others' writes, a failed commit fails every member."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from signoff.errors import StoreError
from signoff.store import groupcommit
from signoff.store.dialect import SQLITE
from signoff.store.sqlite import SqliteStore
from signoff.store.sqltx import SqlTx


def _other(store: SqliteStore) -> sqlite3.Connection:
    """A connection of the test's own: it sees only what is committed."""
    return sqlite3.connect(store.path, isolation_level=None)


def _events(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT actor FROM audit ORDER BY idx")]


def _write(store: SqliteStore, actor: str) -> None:
    with store.transaction() as tx:
        tx.append_audit("w", at_us=0, request_id=None, actor=actor, data={})


def _queue_behind(store: SqliteStore, bodies: list[Callable[[], Any]]) -> list[threading.Thread]:
    """Start a thread per body while the writer lock is held, each queued before the next
    starts (so the group's order is the list's)."""
    threads = []
    for i, body in enumerate(bodies):
        thread = threading.Thread(target=body)
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 5
        while len(store._writer._waiters) < i + 1 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert len(store._writer._waiters) == i + 1
    return threads


@pytest.fixture
def wide_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups stay open while writers queue, however slowly a test queues them."""
    monkeypatch.setattr(groupcommit, "GROUP_WINDOW", 60.0)


def _count_commits(store: SqliteStore) -> list[str]:
    """The COMMITs the writers' connection runs (each one fsync), as SQLite traces them."""
    commits: list[str] = []
    store._writer_connection().set_trace_callback(
        lambda sql: commits.append(sql) if sql.strip().upper() == "COMMIT" else None)
    return commits


def test_racing_writers_commit_in_fewer_commits_than_transactions(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "g.db")
    try:
        commits = _count_commits(store)
        threads = [threading.Thread(target=lambda n=n: [_write(store, f"t{n}-{i}")
                                                        for i in range(25)])
                   for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        with _other(store) as conn:
            actors = _events(conn)
        assert sorted(actors) == sorted(f"t{n}-{i}" for n in range(16) for i in range(25))
        assert store.verify_audit().ok
        # 400 transactions, in fewer commits: writers that queued shared one.
        assert 0 < len(commits) < 400, len(commits)
    finally:
        store.close()


def test_a_member_returns_only_once_its_group_committed(tmp_path: Path,
                                                        wide_window: None) -> None:
    store = SqliteStore(tmp_path / "g.db")
    try:
        seen: dict[str, list[str]] = {}

        def member(name: str) -> Callable[[], None]:
            def run() -> None:
                _write(store, name)
                with _other(store) as conn:  # durable for anyone, the moment it returns
                    seen[name] = _events(conn)
            return run

        holder = store.transaction()
        tx = holder.__enter__()
        tx.append_audit("w", at_us=0, request_id=None, actor="first", data={})
        threads = _queue_behind(store, [member("a"), member("b"), member("c")])
        holder.__exit__(None, None, None)  # hands the open transaction to a, then b, then c
        for thread in threads:
            thread.join(10)
        # One commit for all four: everyone saw all four the moment they returned.
        assert all(seen[name] == ["first", "a", "b", "c"] for name in "abc"), seen
    finally:
        store.close()


def test_a_failed_body_leaves_the_other_members_writes(tmp_path: Path,
                                                       wide_window: None) -> None:
    store = SqliteStore(tmp_path / "g.db")
    errors: list[BaseException] = []

    def failing() -> None:
        try:
            with store.transaction() as tx:
                tx.append_audit("w", at_us=0, request_id=None, actor="doomed", data={})
                raise ValueError("the body failed")
        except ValueError as exc:
            errors.append(exc)

    try:
        holder = store.transaction()
        holder.__enter__().append_audit("w", at_us=0, request_id=None, actor="first", data={})
        threads = _queue_behind(store, [lambda: _write(store, "a"), failing,
                                        lambda: _write(store, "c")])
        holder.__exit__(None, None, None)
        for thread in threads:
            thread.join(10)
        assert [str(e) for e in errors] == ["the body failed"]
        with _other(store) as conn:
            assert _events(conn) == ["first", "a", "c"]
        assert store.verify_audit().ok  # c's event links to a's, not to the undone one
    finally:
        store.close()


def test_a_failed_commit_fails_every_member_and_keeps_none_of_their_writes(
        tmp_path: Path, wide_window: None) -> None:
    store = SqliteStore(tmp_path / "g.db")
    with _other(store) as conn:  # a deferred foreign key: checked at COMMIT, and failing
        conn.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        conn.execute("CREATE TABLE child (id INTEGER, parent INTEGER REFERENCES parent (id) "
                     "DEFERRABLE INITIALLY DEFERRED)")
    outcomes: dict[str, str] = {}

    def member(name: str, body: Callable[[SqlTx], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                with store.transaction() as tx:
                    tx.append_audit("w", at_us=0, request_id=None, actor=name, data={})
                    body(tx)
                outcomes[name] = "returned"
            except StoreError as exc:
                outcomes[name] = exc.code
        return run

    try:
        holder = store.transaction()
        holder.__enter__().append_audit("w", at_us=0, request_id=None, actor="first", data={})
        threads = _queue_behind(store, [
            member("a", lambda tx: None),
            member("b", lambda tx: tx._exec("INSERT INTO child VALUES (1, 99)")),
            member("c", lambda tx: None)])
        with pytest.raises(StoreError):
            holder.__exit__(None, None, None)  # the first member learns it failed too
        for thread in threads:
            thread.join(10)
        assert set(outcomes) == {"a", "b", "c"} and "returned" not in outcomes.values()
        with _other(store) as conn:
            assert _events(conn) == []
        _write(store, "after")  # the store goes on; the head is read again
        assert store.verify_audit().ok
        with _other(store) as conn:
            assert _events(conn) == ["after"]
    finally:
        store.close()


def test_a_lone_writer_commits_at_once(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "g.db")
    try:
        started = time.monotonic()
        _write(store, "alone")
        with _other(store) as conn:
            assert _events(conn) == ["alone"]
        assert time.monotonic() - started < groupcommit.GROUP_WINDOW + 1.0
        assert store._group is None and not store._writer.locked()
    finally:
        store.close()


def test_a_group_is_bounded_in_members(tmp_path: Path, wide_window: None,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groupcommit, "GROUP_MAX", 3)
    store = SqliteStore(tmp_path / "g.db")
    try:
        commits = _count_commits(store)
        holder = store.transaction()
        holder.__enter__().append_audit("w", at_us=0, request_id=None, actor="first", data={})
        threads = _queue_behind(store, [lambda i=i: _write(store, f"m{i}") for i in range(8)])
        holder.__exit__(None, None, None)
        for thread in threads:
            thread.join(10)
        with _other(store) as conn:
            assert len(_events(conn)) == 9
        # Nine transactions, queued at once, in groups of at most three: three commits.
        assert len(commits) == 3, commits
    finally:
        store.close()


def test_a_group_left_open_with_nobody_holding_it_is_closed_by_its_waiting_member(
        tmp_path: Path) -> None:
    """The state an interrupted hand-over leaves (a waiter handed the group, then stopped by
    a signal before it took it, lets the lock go): the member waiting closes the group."""
    store = SqliteStore(tmp_path / "g.db")
    try:
        store._writer.acquire()
        conn = store._writer_connection()
        conn.execute("BEGIN IMMEDIATE")
        group = store._group = groupcommit.Group()
        tx = SqlTx(conn.cursor(), SQLITE)
        tx.append_audit("w", at_us=0, request_id=None, actor="orphaned", data={})
        group.members.append(tx)
        store._writer.release()  # nobody holds the lock, the group is open
        waiting = threading.Thread(target=groupcommit._await, args=(store, group))
        waiting.start()
        waiting.join(5)
        assert not waiting.is_alive() and group.done.is_set() and group.error is None
        with _other(store) as other:
            assert _events(other) == ["orphaned"]
        assert store._group is None and not store._writer.locked()
        _write(store, "next")
        assert store.verify_audit().ok
    finally:
        store.close()
