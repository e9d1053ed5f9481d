"""``signoff requests list`` pages (``--cursor``) and filters, against a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signoff import Policy, RunContext, ToolCall
from signoff.cli import main
from signoff.kernel.gate import Gate
from signoff.store.sqlite import SqliteStore


@pytest.fixture
def db(tmp_path: Path, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "cli.db")
    monkeypatch.setenv("SIGNOFF_DB", path)
    monkeypatch.chdir(tmp_path)
    gate = Gate(policy, SqliteStore(path))
    for i in range(5):
        gate.propose(ToolCall(id=f"b{i}", name="execute", args={"command": f"make build {i}"}),
                     RunContext(thread_id="org/repo#12", principal="paula"))
    for i in range(2):
        gate.propose(ToolCall(id=f"c{i}", name="execute", args={"command": f"make clean {i}"}),
                     RunContext(thread_id="t2"))
    gate.store.close()
    return path


def _list(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    code = main(["requests", "list", "--json", *argv])
    out = capsys.readouterr()
    return code, json.loads(out.out) if code == 0 else [], out.err


def test_pages_follow_the_printed_cursor_to_the_end(db: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, whole, _ = _list(capsys)
    assert code == 0 and len(whole) == 7
    seen: list[str] = []
    cursor: list[str] = []
    while True:
        code, page, err = _list(capsys, "--limit", "3", *cursor)
        assert code == 0
        seen += [r["id"] for r in page]
        if "next_cursor: " not in err:
            break
        cursor = ["--cursor", err.split("next_cursor: ", 1)[1].strip()]
    assert seen == [r["id"] for r in whole]
    assert main(["requests", "list", "--limit", "3"]) == 0
    assert "more: --cursor " in capsys.readouterr().out


def test_filters_and_bad_values(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert len(_list(capsys, "--thread", "org/repo#12")[1]) == 5
    assert len(_list(capsys, "--requester", "paula")[1]) == 5
    assert len(_list(capsys, "--search", "CLEAN")[1]) == 2
    assert len(_list(capsys, "--tool", "execute", "--status", "pending")[1]) == 7
    assert len(_list(capsys, "--since", "4102444800")[1]) == 0
    for argv, wanted in ((("--cursor", "W10"), "invalid_cursor"),
                         (("--limit", "0"), "invalid_limit"),
                         (("--search", "a\x00b"), "nul_character")):
        code, _, err = _list(capsys, *argv)
        assert code == 2 and f"[{wanted}]" in err, (argv, err)
