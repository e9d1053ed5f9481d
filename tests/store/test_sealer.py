"""PostgreSQL seals the audit after commit (``signoff.store.sealer``): events are chained in
``(txid, seq)`` order below the oldest running transaction, by one sealer at a time across
stores, and a sealer killed half-way leaves nothing half-done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from backdoor import raw
from kit import PG_DSN, twin_store
from signoff import audit
from signoff.store.base import Store
from signoff.store.postgres import PostgresStore
from signoff.store.schema import MIGRATIONS
from signoff.store.sealer import lock_key, seal_pass

ROOT = Path(__file__).resolve().parents[2]


def append(store: Store, kind: str, n: int = 1, request_id: str | None = None) -> list[int]:
    with store.transaction() as tx:
        return [tx.append_audit(kind, at_us=1_000 + i, request_id=request_id, actor="t",
                                data={"i": i}) for i in range(n)]


def all_sealable(conn: Any, timeout: float = 30.0) -> None:
    """Wait until every pending event is below the cluster's horizon. Transaction ids are
    cluster-wide: another database's running transaction (a suite run beside this one)
    holds the horizon back, and a pass then seals fewer than the test counts on."""
    deadline = time.monotonic() + timeout
    while True:
        with conn.transaction():
            held = conn.execute(
                "SELECT count(*) FROM audit_pending, pg_current_snapshot() AS s "
                "WHERE txid >= pg_snapshot_xmin(s) AND txid < pg_snapshot_xmax(s)"
            ).fetchone()[0]
        if held == 0:
            return
        assert time.monotonic() < deadline, f"{held} events held back for {timeout} s"
        time.sleep(0.05)


def sealed_kinds(store: Store) -> list[str]:
    """What the audit table holds, read behind the store (no seal first)."""
    with raw(store) as conn:
        return [r[0] for r in conn.execute("SELECT kind FROM audit ORDER BY idx").fetchall()]


@pytest.mark.slow
def test_a_transaction_that_commits_late_holds_later_events_back_and_is_sealed_first(
        postgres_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store = postgres_store
    # The held read below must give up soon (the tests' 30 s default would hold the whole
    # server's horizon that long, and every other test's sealing with it).
    monkeypatch.setattr(PostgresStore.seal, "__kwdefaults__", {"wait": 0.3})
    append(store, "before")
    assert store.seal(wait=30.0)  # sealed before "late" begins, whatever else the server runs
    late = store.transaction()
    tx = late.__enter__()
    tx.append_audit("late", at_us=1, request_id=None, actor="t", data={})  # txid taken now
    try:
        append(store, "after")  # a later transaction, committed while "late" runs
        assert store.seal(wait=0.3) is False  # held by the running transaction
        assert sealed_kinds(store) == ["before"]
        held = store.verify_audit()
        assert held.ok and held.count == 1 and held.unsealed == 1
        assert held.unsealed_since_us == 1_000
    finally:
        late.__exit__(None, None, None)
    assert store.seal(wait=2.0) is True
    # In transaction order: the late one began first, so it comes first; nothing skipped.
    assert sealed_kinds(store) == ["before", "late", "after"]
    result = store.verify_audit()
    assert result.ok and result.count == 3 and result.unsealed == 0


def test_a_rolled_back_event_leaves_no_gap(postgres_store: Store) -> None:
    store = postgres_store
    append(store, "one")
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.append_audit("gone", at_us=1, request_id=None, actor="t", data={})
        raise RuntimeError("rolled back")
    append(store, "two")
    events = list(store.audit_events())
    assert [(e.index, e.kind) for e in events] == [(1, "one"), (2, "two")]
    assert store.verify_audit().ok


def test_a_commit_is_sealed_in_the_background_and_wakes_other_stores(
        postgres_store: Store) -> None:
    store = postgres_store
    other = twin_store(store)
    try:
        other.change_token()
        time.sleep(0.3)  # the listener is up (its connecting wakes waiters once)
        # By the seal's NOTIFY, not the 1 s re-read. The shared server's oldest running
        # transaction holds every seal back while it runs (another suite's, a parallel
        # worker's): one of three tries must wake early.
        woke: list[float] = []
        while len(woke) < 3 and not any(w < 0.9 for w in woke):
            since = other.change_token()
            started = time.monotonic()
            append(store, "request.created", request_id=f"req_bg{len(woke)}")
            other.wait(f"req_bg{len(woke)}", timeout=3.0, since=since)
            woke.append(time.monotonic() - started)
        assert min(woke) < 0.9, woke
        deadline = time.monotonic() + 30
        while len(sealed_kinds(store)) < len(woke) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sealed_kinds(store) == ["request.created"] * len(woke)
        assert store.unsealed() == (0, None)
    finally:
        other.close()


def test_two_stores_sealing_at_once_seal_each_event_once_in_one_chain(
        postgres_store: Store) -> None:
    store = postgres_store
    twin = twin_store(store)
    failures: list[BaseException] = []
    stop = threading.Event()

    def write(target: Store, worker: int) -> None:
        try:
            for n in range(25):
                append(target, f"w{worker}", 1 + n % 3)
        except BaseException as exc:
            failures.append(exc)

    def seal(target: Store) -> None:
        try:
            while not stop.is_set():
                target.seal(wait=0.05)
        except BaseException as exc:
            failures.append(exc)

    writers = [threading.Thread(target=write, args=(twin if w % 2 else store, w))
               for w in range(6)]
    sealers = [threading.Thread(target=seal, args=(s,)) for s in (store, twin, store, twin)]
    try:
        for thread in (*writers, *sealers):
            thread.start()
        for thread in writers:
            thread.join()
        stop.set()
        for thread in sealers:
            thread.join()
    finally:
        twin.close()
    assert failures == []
    total = 6 * sum(1 + n % 3 for n in range(25))
    events = list(store.audit_events())
    assert [e.index for e in events] == list(range(1, total + 1))
    assert sorted(e.kind for e in events) == sorted(
        f"w{w}" for w in range(6) for n in range(25) for _ in range(1 + n % 3))
    result = store.verify_audit()
    assert result.ok and result.count == total and result.unsealed == 0


_KILLED_SEALER = """
import sys, time, psycopg
from signoff.store.sealer import seal_pass
schema, key = sys.argv[1], int(sys.argv[2])
conn = psycopg.connect(sys.argv[3], options=f"-c search_path={schema}")
def hold():
    print("written", flush=True)
    time.sleep(120)
seal_pass(conn, key, before_commit=hold)
"""


def test_a_sealer_killed_mid_pass_leaves_nothing_half_sealed(postgres_store: Store) -> None:
    store = postgres_store
    schema = store.schema  # type: ignore[attr-defined]
    store.sealer.stop()  # type: ignore[attr-defined]  # only the child and the test seal
    append(store, "a", 3)
    child = subprocess.Popen([sys.executable, "-c", _KILLED_SEALER, schema,
                              str(lock_key(schema)), PG_DSN], stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "written"
        # The child holds the lock with three events inserted and deleted, uncommitted:
        # another pass stands aside, and nothing is seen sealed.
        with store.sealer._connect() as conn:  # type: ignore[attr-defined]
            assert seal_pass(conn, lock_key(schema)) is None
        assert sealed_kinds(store) == []
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        assert child.stdout is not None
        child.stdout.close()
    append(store, "b")
    assert store.seal(wait=5.0) is True
    assert sealed_kinds(store) == ["a", "a", "a", "b"]
    result = store.verify_audit()
    assert result.ok and result.count == 4 and result.unsealed == 0


def test_an_event_edited_after_sealing_is_named_by_verify(postgres_store: Store) -> None:
    store = postgres_store
    append(store, "x", 5)
    assert store.verify_audit().ok
    with raw(store) as conn:  # behind the store's back, triggers off (as an owner could)
        conn.execute("SET session_replication_role = replica")
        conn.execute("UPDATE audit SET data = '{\"i\":99}' WHERE idx = 3")
    result = store.verify_audit()
    assert not result.ok and result.first_bad == 3
    assert result.reason == "content does not match its hash"


def test_event_numbers_increase_from_commit_to_commit(postgres_store: Store) -> None:
    """A claim's fencing token is its event's number: each transaction's numbers are above
    those of every transaction committed before it began."""
    store = postgres_store
    numbers = [n for _ in range(20) for n in append(store, "claim", 2)]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)


def test_a_chain_from_schema_13_migrates_and_numbers_go_on_above_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kit import postgres_available

    problem = postgres_available()
    if problem:
        pytest.skip(problem)
    import uuid

    from signoff.store import postgres

    monkeypatch.setattr(postgres, "MIGRATIONS", MIGRATIONS[:13])
    schema = "t_" + uuid.uuid4().hex[:12]
    old = PostgresStore(PG_DSN, schema=schema, setup=True)
    try:
        with raw(old) as conn:  # schema 13: the chain is built inside each transaction
            assert conn.execute("SELECT to_regclass('audit_pending')").fetchone()[0] is None
            prev = audit.GENESIS
            for i in range(1, 5):  # as schema 13's code wrote them (its trigger moves the head)
                data = f'{{"i":{i}}}'
                digest = audit.chain_hash(prev, index=i, at_us=i, kind="old",
                                          request_id="req_o", actor="t", data=data)
                conn.execute("INSERT INTO audit VALUES (%s, %s, 'old', 'req_o', 't', %s, %s, %s)",
                             (i, i, data, prev, digest))
                prev = digest
            assert conn.execute("SELECT idx FROM audit_head").fetchone()[0] == 4
        monkeypatch.undo()
        assert old.migrate() == len(MIGRATIONS)
        old.close()
        new = PostgresStore(PG_DSN, schema=schema)
        try:
            assert new.verify_audit().ok and new.verify_audit().count == 4
            numbers = append(new, "new", 2)
            assert min(numbers) > 4  # fencing tokens go on above the old indexes
            events = list(new.audit_events())
            assert [(e.index, e.kind) for e in events] == [
                (1, "old"), (2, "old"), (3, "old"), (4, "old"), (5, "new"), (6, "new")]
            assert audit.verify(events, head=new.audit_head()).ok
        finally:
            new.close()
    finally:
        old.close()
        cleanup: Any = PostgresStore(PG_DSN, schema=schema)
        try:
            cleanup.drop_schema()
        finally:
            cleanup.close()


def test_a_pass_seals_no_more_than_its_batch(postgres_store: Store) -> None:
    store = postgres_store
    store.sealer.stop()  # type: ignore[attr-defined]
    append(store, "e", 7)
    key = lock_key(store.schema)  # type: ignore[attr-defined]
    with store.sealer._connect() as conn:  # type: ignore[attr-defined]
        all_sealable(conn)
        assert seal_pass(conn, key, batch=3) == 3
        assert seal_pass(conn, key, batch=3) == 3
        assert seal_pass(conn, key, batch=3) == 1
        assert seal_pass(conn, key, batch=3) == 0
    assert sealed_kinds(store) == ["e"] * 7
    assert store.verify_audit().ok


def test_a_pass_does_not_wait_for_its_own_flush_and_leaves_the_session_as_it_was(
        postgres_store: Store) -> None:
    store = postgres_store
    store.sealer.stop()  # type: ignore[attr-defined]
    append(store, "e", 2)
    key = lock_key(store.schema)  # type: ignore[attr-defined]
    inside: list[str] = []

    def setting(conn: Any) -> str:
        with conn.transaction():
            return str(conn.execute("SHOW synchronous_commit").fetchone()[0])

    with store.sealer._connect() as conn:  # type: ignore[attr-defined]
        assert setting(conn) == "on"
        all_sealable(conn)
        assert seal_pass(conn, key, before_commit=lambda: inside.append(
            conn.execute("SHOW synchronous_commit").fetchone()[0])) == 2
        assert setting(conn) == "on"
    assert inside == ["off"]  # the seal's transaction only: its events were durable before
    assert sealed_kinds(store) == ["e"] * 2 and store.verify_audit().ok


@pytest.mark.slow
def test_audit_verify_reports_events_a_running_transaction_holds_back(
        postgres_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from signoff.cli import main

    monkeypatch.chdir(tmp_path)
    # The verify below seals first, and waits on the held transaction: briefly, since that
    # holds the whole shared server's horizon (every other test's sealing) while it waits.
    monkeypatch.setattr(PostgresStore.seal, "__kwdefaults__", {"wait": 0.3})
    store = PostgresStore(postgres_database, setup=True)
    try:
        append(store, "before")
        late = store.transaction()
        late.__enter__().append_audit("late", at_us=7, request_id=None, actor="t", data={})
        try:
            append(store, "after")
            assert main(["audit", "verify", "--json", "--db", postgres_database]) == 0
            held = json.loads(capsys.readouterr().out)
            assert held["ok"] is True and held["count"] == 1
            assert held["unsealed"] == 1 and held["unsealed_since_us"] == 1_000
            assert main(["audit", "verify", "--db", postgres_database]) == 0
            assert "1 committed events not sealed yet" in capsys.readouterr().out
        finally:
            late.__exit__(None, None, None)
        assert main(["audit", "verify", "--json", "--db", postgres_database]) == 0
        done = json.loads(capsys.readouterr().out)
        assert (done["ok"], done["count"], done["unsealed"]) == (True, 3, 0)
    finally:
        store.close()


def test_rows_restored_from_another_cluster_are_sealed(postgres_store: Store) -> None:
    """A dump restored elsewhere keeps its rows' transaction ids, which this cluster may not
    have reached: they ended where they ran, so they are sealed, not held."""
    store = postgres_store
    with raw(store) as conn:
        conn.execute("INSERT INTO audit_pending (txid, at_us, kind, actor, data) VALUES "
                     "((pg_current_xact_id()::text::bigint + 1000000)::text::xid8, 5, "
                     "'restored', 't', '{}')")
    append(store, "here")
    assert store.seal(wait=2.0) is True
    assert sorted(sealed_kinds(store)) == ["here", "restored"]
    assert store.verify_audit().unsealed == 0


@pytest.mark.parametrize("signed", [False, True], ids=["no-key", "key"])
def test_an_idle_sealer_waits_for_its_heartbeat(postgres_store: Store, signed: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Once what was committed is sealed (and, with a key, its head signed), the sealer
    passes again only on a commit or its heartbeat: a store without a key once took every
    sealed pass for a signature owed, and passed every few milliseconds for good."""
    from signoff.keys import SigningKey
    from signoff.store import sealer

    assert isinstance(postgres_store, PostgresStore)
    monkeypatch.setattr(sealer, "SIGN_EVERY", 0.1)
    if signed:
        postgres_store.sign_audit(SigningKey.generate())
    passes: list[float] = []
    real = sealer._seal

    def counted(*args: Any, **kwargs: Any) -> Any:
        passes.append(time.monotonic())
        return real(*args, **kwargs)

    monkeypatch.setattr(sealer, "_seal", counted)
    for n in range(3):
        append(postgres_store, f"e{n}")
        time.sleep(0.06)
    # Another test's long transaction (xdist) holds the cluster's horizon: wait it out.
    deadline = time.monotonic() + 60
    while postgres_store.unsealed()[0]:
        assert time.monotonic() < deadline, "events left unsealed for 60 s"
        time.sleep(0.02)
    time.sleep(0.3)  # a signature owed is made by now (SIGN_EVERY 0.1)
    settled = len(passes)
    time.sleep(0.8)  # under the 1 s heartbeat
    assert len(passes) - settled <= 1, f"{len(passes) - settled} passes while idle"
    if signed:
        with raw(postgres_store) as conn:
            head = conn.execute("SELECT idx FROM audit_head WHERE id = 1").fetchone()[0]
            top = conn.execute("SELECT max(idx) FROM audit_signatures").fetchone()[0]
        assert top == head  # the last head is signed
