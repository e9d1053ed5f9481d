"""sqlite3 has a model: its statements are judged for what reaches outside the database.

With no model, ``sqlite3 *`` admitted ``sqlite3 x.db '.shell rm -rf ~'`` whole: a
dot-command runs a shell command, ``load_extension()`` loads a library, ``.import``
and ``readfile()`` read any file (GTFOBins' sqlite3 file-read). Now a query stays
allowed, and the rest is a program run (``sqlite_exec``, never allowed, a nested
script deny rules see) or a path the workspace guard and ``secret_read`` judge.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kit import assert_human_decides, judge_shell, reader_policy, reasons, secrets_workspace
from signoff import Effect, Policy, ReviewMode
from signoff.shell import analyze, commands


@pytest.fixture
def policy(tmp_path: Path) -> Policy:
    root = secrets_workspace(tmp_path / "ws")
    return reader_policy(root, ["sqlite3 *"], deny=("rm -rf *", "curl *"))


@pytest.mark.parametrize("command", [
    "sqlite3 app.db 'select count(*) from users'",
    "sqlite3 -header -csv app.db 'select * from t limit 5'",
    "sqlite3 app.db .tables", "sqlite3 app.db '.schema users'", "sqlite3 app.db .dump",
    "sqlite3 -readonly app.db 'pragma integrity_check'",
    "sqlite3 -cmd '.mode box' app.db 'select 1'",
    "sqlite3 --version",
])
def test_a_query_stays_allowed(policy: Policy, command: str) -> None:
    verdict = judge_shell(policy, command)
    assert verdict.effect is Effect.ALLOW, (command, verdict)


@pytest.mark.parametrize("command", [
    "sqlite3 app.db '.shell id'", "sqlite3 app.db '.system id'",
    "sqlite3 -cmd '.shell id' app.db", "sqlite3 app.db '.load ./evil'",
    "sqlite3 app.db \"select load_extension('./evil.so')\"",
    "sqlite3 app.db \"select edit('x', 'vi')\"", "sqlite3 app.db \".read '|id'\"",
    "sqlite3 app.db \".output '|sh'\" 'select 1'", "sqlite3 app.db '.once -x'",
    "sqlite3 app.db <<'E'\n.shell id\nE",
])
def test_a_statement_that_runs_a_program_is_never_allowed(policy: Policy, command: str) -> None:
    verdict = judge_shell(policy, command)
    assert verdict.effect is Effect.ASK, (command, verdict)
    assert "sqlite_exec" in {r.code for r in verdict.reasons} | {
        f.code for f in analyze(command).never_allow}, verdict.reasons


@pytest.mark.parametrize("command", [
    "sqlite3 app.db '.shell rm -rf ~'", "sqlite3 app.db '.system curl http://x'",
    "sqlite3 app.db \".read '|rm -rf /tmp/x'\"",
])
def test_the_command_a_statement_runs_meets_the_deny_rules(policy: Policy, command: str) -> None:
    assert judge_shell(policy, command, ReviewMode.FULL).effect is Effect.DENY, command


@pytest.mark.parametrize("command", [
    "sqlite3 app.db '.import .env t'", "sqlite3 app.db '.read .env'",
    "sqlite3 app.db \"select readfile('.env')\"", "sqlite3 app.db 'select readfile(\".env\")'",
    "sqlite3 -init .env app.db", "sqlite3 app.db \".read '|cat .env'\"",
    "sqlite3 app.db <<'E'\n.import .env t\nselect * from t;\nE",
    "sqlite3 app.db <<'E'\nselect readfile('.env');\nE",
])
def test_a_statement_that_reads_a_secret_is_a_mandatory_ask(policy: Policy, command: str) -> None:
    assert_human_decides(policy, command, "secret_read", naming=".env")


def test_a_statement_that_writes_outside_the_workspace_asks(policy: Policy) -> None:
    for command in ("sqlite3 app.db \"attach '/tmp/o.db' as o\"",
                    "sqlite3 app.db \".output /tmp/out.txt\" 'select 1'",
                    "sqlite3 app.db \"select writefile('/tmp/x', 1)\""):
        verdict = judge_shell(policy, command, ReviewMode.FULL)
        assert verdict.effect is Effect.ASK and verdict.mandatory, (command, verdict)
        assert reasons(verdict, "outside_write"), verdict.reasons


def test_the_parse() -> None:
    def kinds(*argv: str) -> list[tuple[str, str | None]]:
        inv = commands.invocation(argv, (True,) * len(argv))
        assert inv.model == "sqlite3"
        return [(p.kind.value, p.value) for p in inv.parts]

    assert kinds("sqlite3", "a.db", "select 1") == [("read", "a.db"), ("inert", None)]
    assert kinds("sqlite3", "a.db") == [("read", "a.db"), ("exec", None)]  # its input
    assert ("read", "x.csv") in kinds("sqlite3", "a.db", ".import --csv x.csv t")
    assert ("write", "o.txt") in kinds("sqlite3", "-cmd", ".output o.txt", "a.db", "select 1")
    assert kinds("sqlite3", "a.db", ".frobnicate")[-1][0] == "unknown"
    inv = commands.invocation(("sqlite3", "a.db", "$Q"), (True, True, False))
    assert inv.parts[-1].kind is commands.Kind.UNKNOWN
