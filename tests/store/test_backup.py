"""``signoff db backup``: a checked copy of a SQLite database taken while it is written."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from signoff.cli import main
from signoff.errors import StoreError
from signoff.store.backup import backup_sqlite
from signoff.store.sqlite import SqliteStore


def _append(store: SqliteStore, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        with store.transaction() as tx:
            tx.append_audit("e", at_us=i, request_id=None, actor="t", data={"i": i})


def test_a_backup_taken_while_writers_run_is_one_committed_state(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "live.db")
    _append(store, 200)
    stop = threading.Event()
    written = [200]

    def write() -> None:
        while not stop.is_set():
            _append(store, 1, written[0])
            written[0] += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        done = backup_sqlite(str(tmp_path / "live.db"), tmp_path / "copy.db")
    finally:
        stop.set()
        writer.join()
    copy = SqliteStore(tmp_path / "copy.db")
    try:
        checked = copy.verify_audit()
        assert checked.ok and checked.count == done.audit_events >= 200
        assert [e.at_us for e in copy.audit_events()] == list(range(checked.count))
        assert copy.audit_head()[1] == done.audit_head
    finally:
        copy.close()
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []


def test_a_copy_whose_chain_does_not_verify_is_not_left_behind(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "src.db")
    _append(store, 5)
    store.close()
    conn = sqlite3.connect(tmp_path / "src.db")
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET actor = 'mallory' WHERE idx = 3")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError) as raised:
        backup_sqlite(str(tmp_path / "src.db"), tmp_path / "copy.db")
    assert raised.value.code == "backup_failed" and "index 3" in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.db"]


def test_the_cli_backs_up_refuses_to_overwrite_and_sends_postgres_to_pg_dump(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = SqliteStore(tmp_path / "s.db")
    _append(store, 3)
    store.close()
    assert main(["db", "backup", "b.db", "--db", "s.db", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["audit_events"] == 3 and report["path"] == "b.db" and report["bytes"] > 0
    assert main(["audit", "verify", "--db", "b.db"]) == 0
    assert "audit ok: 3 events" in capsys.readouterr().out
    assert main(["db", "backup", "b.db", "--db", "s.db"]) == 2
    assert "[backup_exists]" in capsys.readouterr().err
    assert main(["db", "backup", "x.db", "--db", "postgresql://nobody@127.0.0.1:1/x"]) == 2
    err = capsys.readouterr().err
    assert "[backup_with_pg_dump]" in err and "pg_dump" in err
    assert not (tmp_path / "x.db").exists()
