"""What the suite needs of a backend (``Harness``), the fixtures every contract class
shares (``Base``), and the helpers its tests write rows with."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import pytest

from signoff.canonical import args_hash, canonical_text
from signoff.model import (
    ApprovalRequest,
    DecisionKind,
    DecisionRecord,
    RequestStatus,
    ReviewMode,
    Risk,
)
from signoff.store.base import Store
from signoff.store.schema import Migration


@dataclass(frozen=True)
class Harness:
    """One backend, as the suite sees it. Only ``store`` and ``twin`` are required; a test
    that needs a hook the harness leaves out skips, and says which.

    ``store``: a store on an empty, migrated database, the test's own (the harness closes
    it). ``twin(store)``: a second store on the same database — another process, as far as
    each knows. ``refused``: the exceptions a database refusal may surface as besides the
    typed ones (a driver's own). ``connect(store)``: a connection of the test's own to the
    store's database (DB-API, autocommit), to write behind its back; ``undefined_table``:
    what it raises for a table that is not there. ``made_by(migrations)``: a store on a new
    database made by only these migrations. ``lengthen_waits(monkeypatch)``:
    make the store's waits return only when woken (a backend that also re-reads on a timer
    stretches it), so a prompt return proves a wake-up."""

    store: Store
    twin: Callable[[Store], Store]
    refused: tuple[type[BaseException], ...] = ()
    connect: Callable[[Store], AbstractContextManager[Any]] | None = None
    undefined_table: tuple[type[BaseException], ...] = ()
    made_by: Callable[[Sequence[Migration]], Store] | None = None
    lengthen_waits: Callable[[pytest.MonkeyPatch], None] | None = None

    def raw(self, store: Store) -> AbstractContextManager[Any]:
        if self.connect is None:
            pytest.skip("the harness gives no connection of the test's own")
        return self.connect(store)


class Base:
    """The fixtures of every contract class; a backend's test class supplies ``harness``."""

    @pytest.fixture
    def harness(self) -> Harness:
        raise NotImplementedError("a backend's test class defines the harness fixture")

    @pytest.fixture
    def store(self, harness: Harness) -> Store:
        return harness.store

    @pytest.fixture
    def refused(self, harness: Harness) -> tuple[type[BaseException], ...]:
        return harness.refused

    @pytest.fixture
    def long_slice(self, harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
        """Waits that re-read on a timer (PostgreSQL's, every second even unwoken) stretched
        to 30 s: a waiter that returns within two seconds can only have been woken by the
        commit's notification (with a margin a loaded machine's notification lag does not
        eat)."""
        if harness.lengthen_waits is not None:
            harness.lengthen_waits(monkeypatch)


# ---- helpers -------------------------------------------------------------------------------------


def make_request(**changes: Any) -> ApprovalRequest:
    args = {"command": "ls -la", "n": 1.5, "deep": {"b": [1, 2.25, None], "a": "é\u2028☃"}}
    fields: dict[str, Any] = {
        "id": "req_" + uuid.uuid4().hex,
        "call_id": "call_" + uuid.uuid4().hex[:8],
        "tool": "execute",
        "args": canonical_text(args),
        "args_hash": args_hash(args),
        "status": RequestStatus.PENDING,
        "risk": Risk.MEDIUM,
        "summary": "Run shell command: 'ls -la'",
        "policy_version": "kernel-1",
        "created_at": 1_700_000_000.123456,
        "updated_at": 1_700_000_000.123456,
        "thread_id": "t-1",
    }
    fields.update(changes)
    return ApprovalRequest(**fields)


def full_request() -> ApprovalRequest:
    """Every field set to something other than its default."""
    args = {"z": 0.1, "a": [1e21, -0.0, 3], "s": "quote\" back\\slash \u0000 nul", "u": "日本"}
    edited = {"z": 0.30000000000000004}
    return make_request(
        args=canonical_text(args), args_hash=args_hash(args), status=RequestStatus.APPROVED,
        risk=Risk.CRITICAL, summary="Call execute(…)", policy_version="p-7",
        created_at=0.1 + 0.2, updated_at=1e10 + 0.5, thread_id="thread-é", run_id="run-1",
        session_id="sess-1", parent_call="call-parent", principal="alice", agent="bot",
        description="the model says: harmless", expected_effect="runs a shell command",
        evidence=("file:a.txt", "url:https://example.org/x"),
        resource_versions={"b": "sha256:bb", "a": "absent"}, roles=("ops", "sre"),
        approvals_required=3, expires_at=1_700_003_600.25, mandatory=True, decision_id="dec_x",
        reasons=({"step": "gated", "rule": None, "effect": None, "code": "gated",
                  "text": "execute is a gated tool"},),
        review_mode=ReviewMode.AUTO, approved_args=canonical_text(edited),
        approved_hash=args_hash(edited), outcome_code="code", outcome_reason="why",
        alternatives=("do x", "do y"), response="a message", result='{"ok":true}',
        error="E: boom", fencing_token=2**40, lease_until=1_700_000_300.75, executor="host:1",
        version=4, changes=({"path": "/notes.md", "kind": "diff", "truncated": False,
                             "diff": "--- a/notes.md\n+++ b/notes.md\n-<é>\n+</pre>\n",
                             "size": 7, "sha256": None, "lines": 4},))


def insert(store: Store, request: ApprovalRequest) -> ApprovalRequest:
    with store.transaction() as tx:
        tx.insert_request(request)
    return request


def append(store: Store, n: int, *, kind: str = "test.event") -> None:
    with store.transaction() as tx:
        for i in range(n):
            tx.append_audit(kind, at_us=1_000_000 + i, request_id=None, actor="tester",
                            data={"i": i})


def decision(request_id: str, approver: str, at: float, **changes: Any) -> DecisionRecord:
    fields: dict[str, Any] = {"id": "dec_" + uuid.uuid4().hex, "request_id": request_id,
                              "kind": DecisionKind.APPROVE, "approver": approver,
                              "created_at": at, "args_hash": "sha256:aa"}
    fields.update(changes)
    return DecisionRecord(**fields)


def append_and_notify(store: Store, request_id: str) -> None:
    with store.transaction() as tx:
        tx.append_audit("wake", at_us=1, request_id=request_id, actor=None, data={})
        tx.notify(request_id)


def commit_later(store: Store, request_id: str, delay: float, notify: bool = True) -> float:
    committed: list[float] = []

    def work() -> None:
        time.sleep(delay)
        with store.transaction() as tx:
            tx.append_audit("wake", at_us=1, request_id=request_id, actor=None, data={})
            if notify:
                tx.notify(request_id)
        committed.append(time.monotonic())

    thread = threading.Thread(target=work)
    since = store.change_token()
    thread.start()
    store.wait(request_id, timeout=5.0, since=since)
    woke = time.monotonic()
    thread.join()
    assert committed, "the committing thread failed"
    return woke - committed[0]


def warm(store: Store) -> None:
    """PostgreSQL starts its listener on first use; let its reconnect wake-up pass."""
    store.change_token()
    time.sleep(0.3)
