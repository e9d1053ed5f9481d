"""``signoff insights``: its tables and its JSON over a known history, against a real
SQLite file (docs/insights.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histories import DAY, POLICY, T0, history
from signoff.cli import main
from signoff.store.sqlite import SqliteStore


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "insights.db")
    (tmp_path / "signoff.toml").write_text(POLICY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIGNOFF_DB", path)
    history(SqliteStore(path)).close()
    return path


def test_the_tables(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["insights"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("6 asks from 2 threads\n")
    lines = out.splitlines()
    assert "rule            asks  decided  approve  edit  reject  respond" in lines
    assert "ask-push           2        2      50%    0%      0%      50%" in lines
    assert "(unknown_tool)     1        0        -     -       -        -" in lines
    assert "2026-01-02     3" in lines
    assert "high          2     10s  100s" in lines
    assert "expired unanswered: 1  execute 1" in lines
    assert lines[-1] == "rules that never matched: never-used"


def test_the_json(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["insights", "--json", "--since", "2026-01-02", "--until",
                 str(T0 + 2 * DAY)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["since"], data["until"], data["asks"]) == (T0 + DAY, T0 + 2 * DAY, 3)
    assert data["tools"] == [{"key": "execute", "asks": 2}, {"key": "send_mail", "asks": 1}]
    assert data["waits"] == [{"risk": "high", "decided": 1, "median": 100.0, "p90": 100.0}]
    assert data["never_matched"] == ["no-rm", "allow-ls", "deploy-prod", "never-used"]


@pytest.mark.parametrize(("argv", "code"), [
    (["--since", "yesterday-ish"], "invalid_time"),
    (["--since", "2026-01-02", "--until", "2026-01-01"], "invalid_window"),
    (["--top", "0"], "invalid_limit"),
    (["--top", "ten"], "invalid_limit"),
    (["--until", "2026-01-01T00:00:00+99:00"], "invalid_time"),
])
def test_bad_input_is_typed(db: str, capsys: pytest.CaptureFixture[str], argv: list[str],
                            code: str) -> None:
    assert main(["insights", "--json", *argv]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == code
