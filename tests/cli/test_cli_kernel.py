"""The kernel's commands against a real SQLite file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kit import WRITES_POLICY
from signoff import Policy, RunContext, ToolCall
from signoff.cli import main
from signoff.kernel.gate import Gate
from signoff.store.schema import MIGRATIONS
from signoff.store.sqlite import SqliteStore


@pytest.fixture
def setup(tmp_path: Path, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    db = str(tmp_path / "cli.db")
    monkeypatch.setenv("SIGNOFF_DB", db)
    monkeypatch.chdir(tmp_path)
    gate = Gate(policy, SqliteStore(db))
    _, approver = gate.add_user("alice", roles=["ops"])
    _, agent = gate.add_user("robot", kind="agent")
    pending = gate.propose(ToolCall(id="c1", name="execute", args={"command": "make build"},
                                    description="harmless, trust me"),
                           RunContext(thread_id="t1"))
    assert pending.request is not None
    gate.store.close()
    return {"db": db, "approver": approver, "agent": agent, "request": pending.request.id}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list_show_approve(setup: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "requests", "list", "--status", "pending", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)] == [setup["request"]]
    code, out, _ = run(capsys, "requests", "show", setup["request"])
    assert code == 0 and "agent-supplied description: 'harmless, trust me'" in out
    assert '{"command":"make build"}' in out
    code, out, _ = run(capsys, "requests", "approve", setup["request"], "--token",
                       setup["approver"], "--json")
    assert code == 0 and json.loads(out)["status"] == "approved"
    code, _, err = run(capsys, "requests", "approve", setup["request"], "--token",
                       setup["approver"])
    assert code == 2 and "[already_decided]" in err


def test_approve_auto_thread(setup: dict[str, str], policy: Policy,
                             capsys: pytest.CaptureFixture[str]) -> None:
    gate = Gate(policy, SqliteStore(setup["db"]))
    other = gate.propose(ToolCall(id="c2", name="execute", args={"command": "make test"}),
                         RunContext(thread_id="t1"))
    assert other.request is not None
    gate.store.close()
    code, _, err = run(capsys, "requests", "approve", setup["request"], "--auto-thread",
                       "--also", f"{other.request.id}=sha256:nothex", "--token", setup["approver"])
    assert code == 2 and "[invalid_listed]" in err
    code, out, err = run(capsys, "requests", "approve", setup["request"], "--auto-thread",
                         "--also", f"{other.request.id}={other.request.run_hash}",
                         "--token", setup["approver"])
    assert code == 0, err
    assert out.strip() == (f"{setup['request']}: approved (1/1 approvals); thread t1 is auto; "
                           f"also approved {other.request.id}")
    with pytest.raises(SystemExit) as usage:  # one way to approve at a time
        main(["requests", "approve", other.request.id, "--auto-thread", "--thread-grant"])
    assert usage.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_token_from_environment_and_agents_cannot_decide(
        setup: dict[str, str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGNOFF_TOKEN", setup["agent"])
    code, _, err = run(capsys, "requests", "approve", setup["request"])
    assert code == 2 and "[agent_cannot_decide]" in err
    code, _, err = run(capsys, "requests", "approve", setup["request"], "--token", "so_nope")
    assert code == 2 and "[unauthenticated]" in err
    monkeypatch.delenv("SIGNOFF_TOKEN")
    code, _, err = run(capsys, "requests", "approve", setup["request"])
    assert code == 2 and "[unauthenticated]" in err


def test_reject_reaches_rejection_memory(setup: dict[str, str], policy: Policy,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "requests", "reject", setup["request"], "--reason", "not now",
                       "--alternative", "make test", "--token", setup["approver"], "--json")
    assert code == 0 and json.loads(out)["status"] == "rejected"
    gate = Gate(policy, SqliteStore(setup["db"]))
    again = gate.propose(ToolCall(id="c2", name="execute", args={"command": "make build"}),
                         RunContext(thread_id="t1"))
    assert again.verdict.code == "rejected_before"
    assert "not now" in again.verdict.message and "make test" in again.verdict.message


def test_users_add_prints_token_once(setup: dict[str, str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "users", "add", "carol", "--roles", "ops,security", "--json")
    data = json.loads(out)
    assert code == 0 and data["roles"] == ["ops", "security"]
    assert data["token"].startswith("so_")
    stored = sqlite3.connect(setup["db"]).execute(
        "SELECT token_hash FROM users WHERE name = 'carol'").fetchone()[0]
    assert data["token"] not in stored and stored.startswith("sha256:")
    code, _, err = run(capsys, "users", "add", "carol")
    assert code == 2 and "[user_exists]" in err


def test_audit_verify_names_the_tampered_index(setup: dict[str, str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "audit", "verify", "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    count = json.loads(out)["count"]
    conn = sqlite3.connect(setup["db"])
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE audit SET actor = 'mallory' WHERE idx = 2")
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET actor = 'mallory' WHERE idx = 2")
    conn.commit()
    code, out, _ = run(capsys, "audit", "verify")
    assert code == 1 and "BROKEN at index 2" in out
    code, out, _ = run(capsys, "audit", "export", "--json")
    assert len(json.loads(out)) == count


def test_recover_and_migrate(setup: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "recover", "--json")
    assert code == 0 and json.loads(out)["expired"] == 0
    code, out, _ = run(capsys, "db", "migrate", "--json")
    assert code == 0 and json.loads(out) == {"version": len(MIGRATIONS), "backend": "sqlite"}


@pytest.mark.slow  # a PostgreSQL database made and dropped: seconds
def test_an_unmigrated_postgres_database_is_refused_until_migrated(
        postgres_database: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A database at an older schema (here: the first three migrations) makes commands stop
    with ``schema_outdated``; ``signoff db migrate`` brings it up to date."""
    from signoff.store import postgres

    monkeypatch.setattr(postgres, "MIGRATIONS", MIGRATIONS[:3])
    postgres.PostgresStore(postgres_database, setup=True).close()
    monkeypatch.undo()
    code, _, err = run(capsys, "requests", "list", "--db", postgres_database)
    assert code == 2
    assert "[schema_outdated]" in err
    assert f"run `signoff db migrate --db '{postgres_database}'`" in err
    code, out, _ = run(capsys, "db", "migrate", "--db", postgres_database, "--json")
    assert code == 0 and json.loads(out) == {"version": len(MIGRATIONS), "backend": "postgres"}
    code, out, _ = run(capsys, "requests", "list", "--db", postgres_database, "--json")
    assert code == 0 and json.loads(out) == []


def test_edit_respond_cancel_and_who_asked(tmp_path: Path, policy: Policy,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from signoff.policy.modes import trusted_context

    db = str(tmp_path / "cli.db")
    monkeypatch.setenv("SIGNOFF_DB", db)
    monkeypatch.chdir(tmp_path)
    gate = Gate(policy, SqliteStore(db), agent="runner")
    tokens = {name: gate.add_user(name, roles=roles, kind=kind)[1] for name, roles, kind in (
        ("alice", ["ops"], "approver"), ("carl", [], "approver"), ("root", [], "admin"),
        ("robot", [], "agent"))}
    ids = []
    for n in range(4):
        proposal = gate.propose(ToolCall(id=f"c{n}", name="execute",
                                         args={"command": "make build"}),
                                trusted_context(thread_id=f"t{n}", principal="robot"))
        assert proposal.request is not None
        ids.append(proposal.request.id)
    gate.store.close()

    code, out, _ = run(capsys, "requests", "show", ids[0])
    assert code == 0 and "  asked by robot (agent runner)" in out
    code, out, _ = run(capsys, "requests", "show", ids[0], "--json")
    assert (json.loads(out)["principal"], json.loads(out)["agent"]) == ("robot", "runner")

    # edit: approve with changed arguments; the reason reaches the agent with the outcome
    code, _, err = run(capsys, "requests", "edit", ids[0], "--args", "{not json",
                       "--token", tokens["alice"])
    assert code == 2 and "[invalid_edit]" in err
    code, out, _ = run(capsys, "requests", "edit", ids[0], "--args",
                       '{"command": "make test"}', "--reason", "tests first", "--token",
                       tokens["alice"], "--json")
    assert code == 0 and json.loads(out)["status"] == "approved"
    code, out, _ = run(capsys, "requests", "show", ids[0])
    assert 'edited to (sha256:' in out and '{"command":"make test"}' in out
    # respond: the agent gets the message, nothing runs
    code, out, _ = run(capsys, "requests", "respond", ids[1], "--message", "use staging",
                       "--token", tokens["alice"], "--json")
    assert code == 0 and json.loads(out)["status"] == "responded"
    # cancel: the asker or an admin, with a reason; anyone else is refused
    code, _, err = run(capsys, "requests", "cancel", ids[2], "--reason", "mine now",
                       "--token", tokens["carl"])
    assert code == 2 and "[not_requester]" in err
    code, _, err = run(capsys, "requests", "cancel", ids[2], "--reason", "  ",
                       "--token", tokens["robot"])
    assert code == 2 and "[missing_reason]" in err
    code, out, _ = run(capsys, "requests", "cancel", ids[2], "--reason", "asked by mistake",
                       "--token", tokens["robot"])
    assert code == 0 and f"{ids[2]}: cancelled by robot (asked by mistake)" in out
    code, _, err = run(capsys, "requests", "cancel", ids[2], "--reason", "again",
                       "--token", tokens["robot"])
    assert code == 2 and "[already_decided]" in err
    code, out, _ = run(capsys, "requests", "cancel", ids[3], "--reason", "stuck run",
                       "--token", tokens["root"], "--json")
    assert code == 0 and json.loads(out)["outcome_reason"] == "stuck run"

    gate = Gate(policy, SqliteStore(db))
    edited = gate.outcome(ids[0])
    assert (edited.kind.value, edited.code, edited.reason) == ("approved", "edited",
                                                                "tests first")
    assert edited.args == {"command": "make test"}
    assert gate.outcome(ids[1]).message == "use staging"
    cancelled = gate.outcome(ids[2])
    assert (cancelled.kind.value, cancelled.reason) == ("cancelled", "asked by mistake")
    actors = {(e.kind, e.request_id): e.actor for e in gate.store.audit_events()}
    assert actors[("request.cancelled", ids[2])] == "robot"
    assert actors[("request.cancelled", ids[3])] == "root"
    gate.store.close()


def test_an_oversized_id_on_the_command_line_is_a_typed_error(
        setup: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """The input contract holds on the CLI too: an 8 KB thread id or request id is refused
    by name before any database query (a PostgreSQL index would refuse it with a 5xx-ish
    internal error otherwise)."""
    code, _, err = run(capsys, "requests", "list", "--thread", "a" * 9000)
    assert code == 2 and "[too_long]" in err and "--thread" in err
    code, _, err = run(capsys, "requests", "cancel", "r" * 9000, "--reason", "x", "--token",
                       setup["agent"])
    assert code == 2 and ("[too_long]" in err or "[invalid_identifier]" in err), err


def test_requests_show_prints_the_write_evidence(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text("one\ntwo\n")
    policy = Policy.from_toml(WRITES_POLICY.format(root=root))
    db = str(tmp_path / "cli.db")
    monkeypatch.setenv("SIGNOFF_DB", db)
    gate = Gate(policy, SqliteStore(db))
    pending = gate.propose(ToolCall(id="w1", name="write_file", args={
        "file_path": "/notes.md", "content": "one\n\x1b[2J</pre>\n"}), RunContext(thread_id="t"))
    assert pending.request is not None
    gate.store.close()
    code, out, _ = run(capsys, "requests", "show", pending.request.id)
    assert code == 0
    assert f"  - /notes.md -> {root.resolve()}/notes.md (diff, 8 bytes now, sha256 " in out
    lines = out.splitlines()
    start = lines.index("    | --- a/notes.md")
    assert lines[start:start + 6] == ["    | --- a/notes.md", "    | +++ b/notes.md",
                                      "    | @@ -1,2 +1,2 @@", "    |  one", "    | -two",
                                      "    | +\\x1b[2J</pre>"]
    assert "\x1b" not in out  # a terminal escape in a file is shown, not obeyed
    code, out, _ = run(capsys, "requests", "show", pending.request.id, "--json")
    [change] = json.loads(out)["changes"]
    assert change["kind"] == "diff" and change["diff"].endswith("+\x1b[2J</pre>\n")
    assert change["resolved"] == f"{root.resolve()}/notes.md"


def test_an_export_says_when_committed_events_are_not_sealed_yet(
        postgres_database: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL seals the audit after commit, behind the oldest running transaction: an
    export taken while one holds events back says how many it could not include."""
    from signoff.store.postgres import PostgresStore

    monkeypatch.setattr(PostgresStore.seal, "__kwdefaults__", {"wait": 0.2})
    store = PostgresStore(postgres_database, setup=True)
    try:
        with store.transaction() as tx:
            tx.append_audit("before", at_us=1, request_id=None, actor="t", data={})
        held = store.transaction()
        tx = held.__enter__()
        tx.append_audit("held", at_us=2, request_id=None, actor="t", data={})  # txid taken
        try:
            with store.transaction() as later:
                later.append_audit("after", at_us=3, request_id=None, actor="t", data={})
            code, out, err = run(capsys, "audit", "export", "--db", postgres_database,
                                 "--json")
            assert code == 0 and [e["kind"] for e in json.loads(out)] == ["before"]
            # "after" committed; "held" is not committed yet, so not counted (nor lost)
            assert "1 committed audit event is not sealed yet" in err
        finally:
            held.__exit__(None, None, None)
        code, out, err = run(capsys, "audit", "export", "--db", postgres_database, "--json")
        assert [e["kind"] for e in json.loads(out)] == ["before", "held", "after"]
        assert "not sealed" not in err
    finally:
        store.close()
