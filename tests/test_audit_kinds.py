"""``AuditKind`` is every audit event kind there is: each writer names a member, a full
flow's events parse as members, and docs/kernel.md lists exactly the members."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from signoff.audit import AuditKind
from signoff.identity import Identity
from signoff.kernel import lifecycle
from signoff.kernel.execution import Execution
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import ProposalKind
from signoff.model import Decision, RequestStatus, RunContext, ToolCall
from signoff.policy import Policy
from signoff.store.base import Store

SRC = Path(__file__).parents[1] / "src" / "signoff"
DOCS = Path(__file__).parents[1] / "docs"
# The calls that write an audit event, and the argument that is its kind.
WRITERS = {"append_audit", "record_audit", "add"}


def _kind_arguments() -> list[tuple[str, ast.expr]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in WRITERS and node.args:
                if node.func.attr == "add" and "verdicts" not in ast.unparse(node.func.value):
                    continue
                found.append((f"{path.relative_to(SRC)}:{node.lineno}", node.args[0]))
    return found


def test_every_writer_names_a_member() -> None:
    arguments = _kind_arguments()
    assert len(arguments) > 30
    for where, argument in arguments:
        assert not isinstance(argument, (ast.Constant, ast.JoinedStr, ast.BinOp)), \
            f"{where}: a kind written as a string, not an AuditKind"


def test_every_member_named_in_src_exists_and_every_member_is_written() -> None:
    named: set[str] = set()
    for path in sorted(SRC.rglob("*.py")):
        named.update(re.findall(r"\bAuditKind\.([A-Z_]+)\b", path.read_text("utf-8")))
    assert named <= set(AuditKind.__members__)
    # Members written outside ``signoff.audit`` by name; the moves through lifecycle's table.
    written = named | {lifecycle.move_event(source, target, now=0.0, actor=None,
                                            changes={})[0].name
                       for source, targets in lifecycle.TRANSITIONS.items()
                       for target in targets}
    assert written == set(AuditKind.__members__)


def test_each_kind_is_its_string_with_a_description() -> None:
    for kind in AuditKind:
        assert kind == kind.value and str(kind) == kind.value and type(str(kind)) is str
        assert AuditKind(kind.value) is kind
        assert kind.doc and kind.doc == kind.doc.strip(), kind
    assert len(set(AuditKind)) == len(AuditKind.__members__)  # no two names for one kind


def test_docs_list_every_kind() -> None:
    text = (DOCS / "kernel.md").read_text("utf-8")
    section = text.split("### Audit event kinds", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (.*) \|$", section, flags=re.MULTILINE)
    expected = [(kind.value, kind.doc) for kind in AuditKind]
    table = "\n".join(f"| `{k}` | {doc} |" for k, doc in expected)
    assert rows == expected, f"docs/kernel.md's table of kinds should read:\n{table}"


def test_a_full_flow_writes_only_members(policy: Policy, store: Store) -> None:
    gate = Gate(policy, store, agent="agent-bot", verdict_audit="sync")
    ops = [gate.add_user(name, roles=["ops"])[0] for name in ("alice", "bob")]
    gate.set_roles("bob", ["ops", "deployer"], actor="root")
    gate.disable_user("bob", actor="root")
    gate.enable_user("bob", actor="root")
    _, token = gate.rotate_token("alice", actor="root")
    secret, _ = gate.sign_in(token)
    gate.end_session(secret)
    gate.mint_login_link("alice", actor="root")
    gate.set_thread_mode("t-1", "manual", actor="root")
    context = RunContext(thread_id="t-1", run_id="r-1", principal="paula")
    denied = gate.propose(ToolCall(id="c-1", name="execute", args={"command": "rm -rf x"}),
                          context)
    assert denied.kind is ProposalKind.DENIED
    deploy = gate.propose(ToolCall(id="c-2", name="deploy", args={"to": "prod"}), context)
    assert deploy.kind is ProposalKind.PENDING and deploy.request is not None
    rid = deploy.request.id
    for identity in ops:
        _decide(gate, rid, identity)
    execution = gate.claim(rid)
    assert isinstance(execution, Execution)
    gate.report(execution, result="done")
    other = gate.propose(ToolCall(id="c-3", name="deploy", args={"to": "staging"}), context)
    assert other.request is not None
    gate.cancel(other.request.id, actor="paula", reason="not now")
    gate.flush()
    events = gate.audit_events()
    kinds = [AuditKind(event.kind) for event in events]  # each one a member
    assert {AuditKind.USER_ADDED, AuditKind.USER_ROLES, AuditKind.USER_DISABLED,
            AuditKind.USER_ENABLED, AuditKind.USER_TOKEN_ROTATED, AuditKind.SESSION_STARTED,
            AuditKind.SESSION_ENDED, AuditKind.USER_LOGIN_LINK, AuditKind.THREAD_MODE,
            AuditKind.CALL_DENIED, AuditKind.REQUEST_CREATED, AuditKind.DECISION_RECORDED,
            AuditKind.REQUEST_APPROVED, AuditKind.REQUEST_EXECUTING,
            AuditKind.REQUEST_SUCCEEDED, AuditKind.REQUEST_CANCELLED} <= set(kinds)
    assert gate.verify_audit().ok
    assert gate.request(rid).status is RequestStatus.SUCCEEDED


def _decide(gate: Gate, request_id: str, identity: Identity) -> None:
    gate.decide(request_id, Decision.approve(), identity=identity)
