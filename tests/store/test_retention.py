"""``signoff db purge``: finished requests before a date go, the audit stays verifiable from
a checkpoint, and nothing of a request still kept is cut — on both backends."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

from backdoor import raw
from signoff.cli import main
from signoff.errors import ConfigurationError
from signoff.identity import Identity
from signoff.kernel.gate import Gate
from signoff.kernel.lifecycle import TERMINAL
from signoff.keys import SigningKey
from signoff.model import Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.backup import backup_sqlite
from signoff.store.base import Store
from signoff.store.retention import FINISHED, purge
from signoff.store.sqlite import SqliteStore

T0 = 1_700_000_000.0
DAY = 86_400.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


class History:
    """A gate on a clock the test moves; requests made days apart."""

    def __init__(self, policy: Policy, store: Store, key: SigningKey | None = None) -> None:
        self.clock = Clock()
        self.store = store
        self.gate = Gate(policy, store, clock=self.clock, agent="bot", lease=60.0,
                         signing_key=key)

        @self.gate.tool()
        def execute(command: str) -> str:
            return f"ran {command}"

        self.alice: Identity = self.gate.add_user("alice", roles=["ops"])[0]
        self.n = 0

    def pending(self, thread: str = "t-1") -> str:
        self.n += 1
        call = ToolCall(id=f"c-{self.n}", name="execute", args={"command": f"ls {self.n}"})
        proposal = self.gate.propose(call, RunContext(thread_id=thread, principal="paula"))
        assert proposal.request is not None
        return str(proposal.request.id)

    def rejected(self, thread: str = "t-1") -> str:
        rid = self.pending(thread)
        self.gate.decide(rid, Decision.reject("no"), identity=self.alice)
        return rid

    def later(self, days: float) -> None:
        self.clock.now += days * DAY


@pytest.fixture
def history(policy: Policy, store: Store) -> History:
    return History(policy, store)


def _first_event(store: Store, request_id: str) -> int:
    return min(e.index for e in store.audit_events() if e.request_id == request_id)


def test_finished_requests_before_the_date_go_and_the_chain_verifies_from_a_checkpoint(
        history: History) -> None:
    store = history.store
    old = [history.rejected() for _ in range(3)]
    history.later(1)
    waiting = history.pending("t-2")  # old, but still pending: kept, and so is its history
    history.later(1)
    after_waiting = history.rejected()
    history.later(30)
    recent = history.rejected()
    head_before = store.audit_head()

    done = purge(store, before=T0 + 10 * DAY, now=history.clock.now, actor="os:ops")

    assert done.requests == 4  # the three old and the one after the waiting one
    for rid in (*old, after_waiting):
        assert store.get_request(rid) is None and store.decisions(rid) == []
    assert store.get_request(waiting) is not None and store.get_request(recent) is not None
    # The prefix ends right before the waiting request's first event: its history is whole.
    assert done.anchor is not None and done.anchor[0] == _first_event(store, waiting) - 1
    assert done.events == done.anchor[0]
    remaining = list(store.audit_events())
    assert remaining[0].index == done.anchor[0] + 1
    assert remaining[0].prev_hash == done.anchor[1]
    checked = store.verify_audit()
    assert checked.ok, checked
    assert checked.anchor == done.anchor[0] and store.audit_anchor() == done.anchor
    assert store.audit_head()[0] > head_before[0]  # the purge audited itself
    purged = [e for e in remaining if e.kind == "db.purged"]
    assert [e.actor for e in purged] == ["os:ops", "os:ops"]
    assert [json.loads(e.data)["requests"] for e in purged] == [4, 0]
    assert json.loads(purged[1].data)["checkpoint"] == {"index": done.anchor[0],
                                                         "hash": done.anchor[1]}


def test_a_second_purge_moves_the_anchor_and_a_dry_run_counts_without_removing(
        history: History) -> None:
    store = history.store
    history.rejected()
    history.later(2)
    waiting = history.pending("t-2")
    history.rejected()
    first = purge(store, before=T0 + DAY, now=history.clock.now, actor=None)
    assert first.requests == 1 and first.anchor is not None
    history.gate.decide(waiting, Decision.reject("late"), identity=history.alice)
    history.later(20)

    dry = purge(store, before=history.clock.now - DAY, now=history.clock.now, actor=None,
                dry_run=True)
    assert dry.dry_run and dry.requests == 2
    assert store.get_request(waiting) is not None  # nothing removed
    assert store.audit_anchor() == first.anchor

    second = purge(store, before=history.clock.now - DAY, now=history.clock.now, actor=None)
    assert (second.requests, second.events, second.anchor) == (dry.requests, dry.events,
                                                               dry.anchor)
    assert second.anchor is not None and second.anchor[0] > first.anchor[0]
    assert store.get_request(waiting) is None
    checked = store.verify_audit()
    assert checked.ok and checked.anchor == second.anchor[0]
    # Once more changes nothing but its own audit event.
    third = purge(store, before=history.clock.now - DAY, now=history.clock.now, actor=None)
    assert (third.requests, third.events, third.anchor) == (0, 0, None)
    assert store.verify_audit().ok


def test_small_batches_give_the_same_result_in_many_transactions(history: History) -> None:
    store = history.store
    ids = [history.rejected(f"t-{i % 3}") for i in range(7)]
    history.later(5)
    keep = history.rejected()
    done = purge(store, before=T0 + DAY, now=history.clock.now, actor=None, batch=2)
    assert done.requests == 7 and all(store.get_request(r) is None for r in ids)
    assert store.get_request(keep) is not None
    assert done.anchor is not None and done.anchor[0] == _first_event(store, keep) - 1
    kinds = [json.loads(e.data) for e in store.audit_events() if e.kind == "db.purged"]
    assert [k["requests"] for k in kinds if k["requests"]] == [2, 2, 2, 1]
    assert sum(k["events"] for k in kinds) == done.events
    assert len({k["checkpoint"]["index"] for k in kinds if k.get("checkpoint")}) > 1
    assert store.verify_audit().ok


def test_nothing_newer_than_the_date_or_unfinished_is_touched(history: History) -> None:
    store = history.store
    pending = history.pending()
    approved = history.pending("t-2")
    history.gate.decide(approved, Decision.approve(), identity=history.alice)
    history.later(10)
    done = purge(store, before=history.clock.now, now=history.clock.now, actor=None)
    assert done.requests == 0
    # Only the users' events before the first request can go; every request keeps its own.
    assert store.get_request(pending) is not None and store.get_request(approved) is not None
    assert done.anchor is None or done.anchor[0] < _first_event(store, pending)
    assert store.verify_audit().ok


def test_a_purged_request_takes_its_receipt_with_it(policy: Policy, store: Store) -> None:
    history = History(policy, store, SigningKey.generate())
    ran, kept = history.pending(), history.pending()
    for rid in (ran, kept):
        history.gate.decide(rid, Decision.approve(), identity=history.alice)
    assert history.gate.resume(ran).result == "ran ls 1"
    assert store.receipt(ran) is not None and store.receipt(kept) is not None
    history.later(30)
    done = purge(store, before=history.clock.now - DAY, now=history.clock.now, actor="os:ops")
    assert done.requests == 1  # the succeeded one; the approved one is never purged
    assert store.receipt(ran) is None and store.receipt(kept) is not None


def test_a_purge_in_the_future_is_refused(history: History) -> None:
    with pytest.raises(ConfigurationError) as caught:
        purge(history.store, before=history.clock.now + 1, now=history.clock.now, actor=None)
    assert caught.value.code == "purge_future"


def _refused(store: Store, statement: str) -> None:
    errors: tuple[type[BaseException], ...] = (sqlite3.DatabaseError, psycopg.Error)
    with raw(store) as conn, pytest.raises(errors, match="append-only"):
        conn.execute(statement)


def test_the_audit_loses_only_what_a_checkpoint_covers_and_checkpoints_never_change(
        history: History) -> None:
    store = history.store
    history.rejected()
    history.later(5)
    history.rejected()
    done = purge(store, before=T0 + DAY, now=history.clock.now, actor=None)
    assert done.anchor is not None
    top = store.audit_head()[0]
    _refused(store, f"DELETE FROM audit WHERE idx = {done.anchor[0] + 1}")
    _refused(store, f"DELETE FROM audit WHERE idx = {top}")
    _refused(store, "UPDATE audit_checkpoints SET hash = 'x'")
    _refused(store, "DELETE FROM audit_checkpoints")
    assert store.verify_audit().ok


def test_an_event_removed_after_the_anchor_behind_the_stores_back_is_named(
        history: History) -> None:
    store = history.store
    history.rejected()
    history.later(5)
    history.rejected()
    history.rejected()
    done = purge(store, before=T0 + DAY, now=history.clock.now, actor=None)
    assert done.anchor is not None
    victim = done.anchor[0] + 1
    with raw(store) as conn:  # an attacker who can drop the guard
        if store.backend == "sqlite":
            conn.execute("DROP TRIGGER audit_no_delete")
        else:
            conn.execute("ALTER TABLE audit DISABLE TRIGGER audit_no_change")
        conn.execute(f"DELETE FROM audit WHERE idx = {victim}")
    checked = store.verify_audit()
    assert not checked.ok and checked.first_bad == victim


def test_a_forged_checkpoint_does_not_verify(history: History) -> None:
    store = history.store
    history.rejected()
    history.later(5)
    history.rejected()
    done = purge(store, before=T0 + DAY, now=history.clock.now, actor=None)
    assert done.anchor is not None
    forged = done.anchor[0] + 1  # claims one more event was purged, keeping it in place
    with raw(store) as conn:
        conn.execute("INSERT INTO audit_checkpoints (idx, hash, at_us, before_us, created_at) "
                     f"VALUES ({forged}, 'sha256:{'1' * 64}', 0, 0, 0)")
    checked = store.verify_audit()
    assert not checked.ok and checked.first_bad == forged + 1


def test_the_store_and_the_kernel_agree_on_what_is_finished() -> None:
    assert set(FINISHED) == {s.value for s in TERMINAL}
    assert RequestStatus.APPROVED.value not in FINISHED


def test_a_backup_of_a_purged_database_verifies(sqlite_store: Store, policy: Policy,
                                                tmp_path: Path) -> None:
    history = History(policy, sqlite_store)
    for _ in range(3):
        history.rejected()
    history.later(3)
    history.rejected()
    done = purge(sqlite_store, before=T0 + DAY, now=history.clock.now, actor=None)
    assert done.anchor is not None
    copy = backup_sqlite(str(sqlite_store.path), tmp_path / "copy.db")  # type: ignore[attr-defined]
    assert copy.audit_head == sqlite_store.audit_head()[1]
    reopened = SqliteStore(tmp_path / "copy.db")
    try:
        assert reopened.verify_audit().ok and reopened.audit_anchor() == done.anchor
    finally:
        reopened.close()


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, (json.loads(out) if "--json" in argv else out)


def test_the_cli_purges_with_a_date_or_an_age_and_says_where_the_chain_starts(
        policy: Policy, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.db"
    store = SqliteStore(db)
    history = History(policy, store)
    for _ in range(2):
        history.rejected()
    store.close()
    # The clock of these requests is 2023; any age of a few days reaches them.
    code, dry = _cli(capsys, "db", "purge", "--db", str(db), "--before", "2d", "--dry-run",
                     "--json")
    assert code == 0 and dry["dry_run"] and dry["requests"] == 2
    code, text = _cli(capsys, "db", "purge", "--db", str(db), "--before", "2024-01-01")
    assert code == 0 and "removed 2 requests" in text and "now starts after event" in text
    code, checked = _cli(capsys, "audit", "verify", "--db", str(db), "--json")
    assert code == 0 and checked["ok"] and checked["anchor"] > 0
    reopened = SqliteStore(db)
    try:
        purged = [e for e in reopened.audit_events() if e.kind == "db.purged"]
        assert purged and all(e.actor and e.actor.startswith("os:") for e in purged)
    finally:
        reopened.close()


@pytest.mark.parametrize("when", ["yesterday", "2026-13-01", "3x", "", "2026-01-01\x00",
                                  "9" * 8192, "2026-01-01T00:00\u200b"])
def test_the_cli_refuses_a_moment_it_cannot_read(when: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["db", "purge", "--db", str(tmp_path / "s.db"), "--before", when])
    assert code == 2 and "[invalid_time]" in capsys.readouterr().err


def test_the_cli_refuses_a_moment_in_the_future(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["db", "migrate", "--db", str(tmp_path / "s.db")]) == 0  # only migrate creates
    code = main(["db", "purge", "--db", str(tmp_path / "s.db"), "--before", "2999-01-01"])
    assert code == 2 and "[purge_future]" in capsys.readouterr().err


_CHILD = """
import os, signal, sys
from signoff.store.retention import purge
from signoff.store.sqltx import SqlTx

backend, where, schema, kill_at, before, now = sys.argv[1:]
if backend == "sqlite":
    from signoff.store.sqlite import SqliteStore
    store = SqliteStore(where)
else:
    from signoff.store.postgres import PostgresStore
    store = PostgresStore(where, schema=schema)
calls = [0]
real = SqlTx.append_audit

def append_audit(self, kind, **kw):
    if kind == "db.purged":
        calls[0] += 1
        if calls[0] == int(kill_at):  # everything of this batch written, nothing committed
            os.kill(os.getpid(), signal.SIGKILL)
    return real(self, kind, **kw)

SqlTx.append_audit = append_audit
purge(store, before=float(before), now=float(now), actor="child", batch=2)
"""


@pytest.mark.parametrize("kill_at", [2, 5])  # in the requests' batches; in the audit's
def test_a_purge_killed_half_way_leaves_a_verifiable_store_the_next_run_completes(
        history: History, kill_at: int) -> None:
    import signal
    import subprocess
    import sys

    store = history.store
    old = [history.rejected(f"t-{i}") for i in range(5)]  # three batches of two, then audit
    history.later(5)
    keep = history.rejected()
    store.seal()
    where = str(getattr(store, "path", None) or getattr(store, "dsn"))  # noqa: B009
    schema = str(getattr(store, "schema", ""))
    child = subprocess.run([sys.executable, "-c", _CHILD, store.backend, where, schema,
                            str(kill_at), str(T0 + DAY), str(history.clock.now)],
                           capture_output=True, text=True, timeout=120, check=False)
    assert child.returncode == -signal.SIGKILL, (child.returncode, child.stderr)
    left = [r for r in old if store.get_request(r) is not None]
    if kill_at == 2:  # one batch committed, the second lost whole
        assert len(left) == 3
        assert all(store.decisions(r) for r in left)  # a request and its decisions together
        assert store.audit_anchor()[0] == 0
    else:  # every request gone; the audit cut stopped at a checkpoint, one batch short
        assert left == []
        assert 0 < store.audit_anchor()[0] < _first_event(store, keep) - 1
    checked = store.verify_audit()
    assert checked.ok, checked
    done = purge(store, before=T0 + DAY, now=history.clock.now, actor=None, batch=2)
    assert all(store.get_request(r) is None for r in old)
    assert store.get_request(keep) is not None
    assert store.audit_anchor()[0] == _first_event(store, keep) - 1
    assert done.requests == len(left)
    assert store.verify_audit().ok
