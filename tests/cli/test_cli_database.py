"""A mistyped ``--db`` is said as what it is (issue 43, build point 2): only the commands
that create a database (``serve``'s first start, ``db migrate``) make a SQLite file that
is not there; every other answers ``database_missing`` with the path and the command that
creates it, exit 2, and leaves no file behind. A URL missing its ``://`` is
``invalid_database_url``; a path in a directory that does not exist is ``database_missing``
naming the directory — never ``store_read_only``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from signoff.cli import main
from signoff.errors import ConfigurationError
from signoff.store.sqlite import SqliteStore

EXE = Path(sys.executable).with_name("signoff")

# Every command that opens the database without creating it, with the arguments it needs.
READERS = [
    ["requests", "list"],
    ["requests", "show", "req_0123"],
    ["requests", "approve", "req_0123", "--token", "t"],
    ["users", "add", "alice", "--roles", "ops"],
    ["users", "list"],
    ["audit", "verify"],
    ["audit", "export"],
    ["recover"],
    ["db", "backup", "copy.db"],
    ["db", "purge", "--before", "90d"],
    ["webhooks", "list"],
    ["webhooks", "deliveries"],
]


@pytest.mark.parametrize("command", READERS, ids=lambda c: " ".join(c[:2]))
def test_a_command_that_does_not_create_says_database_missing(
        command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*command, "--db", "signof.db", "--json"]) == 2
    out, err = capsys.readouterr()
    error = json.loads(out)["error"]
    assert error["code"] == "database_missing", error
    assert "signof.db" in error["message"]
    assert "signoff db migrate --db signof.db" in error["message"]
    assert "signoff serve --db signof.db" in error["message"]
    assert "[database_missing]" in err and "read-only" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "a file was created"


def test_the_default_database_is_not_created_either(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIGNOFF_DB", raising=False)
    assert main(["requests", "list"]) == 2
    assert "[database_missing]: no database at signoff.db" in capsys.readouterr().err
    assert not (tmp_path / "signoff.db").exists()


@pytest.mark.parametrize("url", ["postgresql//typo", "postgres:localhost/db",
                                 "postgresql:/host/db", "sqlite:signoff.db"])
def test_a_url_missing_its_scheme_separator_is_invalid_database_url(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    for command in (["requests", "list"], ["db", "migrate"], ["doctor"]):
        assert main([*command, "--db", url, "--json"]) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "invalid_database_url", error
        assert url in error["message"] and "postgresql://" in error["message"]
    assert list(tmp_path.iterdir()) == []


def test_a_missing_directory_is_named_even_for_a_command_that_creates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "nope" / "signoff.db"
    for command in (["requests", "list"], ["db", "migrate"]):
        assert main([*command, "--db", str(target), "--json"]) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "database_missing", error
        assert f"the directory {target.parent} does not exist" in error["message"]
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_not_a_database(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["users", "list", "--db", str(tmp_path), "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "database_missing" and "is a directory" in error["message"]


def test_db_migrate_creates_and_then_others_open_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["db", "migrate", "--db", "new.db"]) == 0
    assert (tmp_path / "new.db").is_file()
    capsys.readouterr()
    assert main(["requests", "list", "--db", "new.db"]) == 0
    assert "no requests" in capsys.readouterr().out


def test_the_python_store_creates_by_default_and_refuses_when_asked(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "made.db")
    store.close()
    assert (tmp_path / "made.db").is_file()
    with pytest.raises(ConfigurationError) as caught:
        SqliteStore(tmp_path / "typo.db", create=False)
    assert caught.value.code == "database_missing"
    assert not (tmp_path / "typo.db").exists()
    with pytest.raises(ConfigurationError) as caught:
        SqliteStore(tmp_path / "no" / "dir.db")
    assert caught.value.code == "database_missing"


@pytest.mark.slow
def test_typos_through_the_real_command(tmp_path: Path) -> None:
    """The installed ``signoff`` command: one JSON line on stdout, one typed line on
    stderr, exit 2, no traceback, and the mistyped path still does not exist."""
    cases = [
        (["requests", "list", "--db", "signof.db"], "database_missing"),
        (["users", "add", "alice", "--db", "signof.db"], "database_missing"),
        (["audit", "verify", "--db", "signof.db"], "database_missing"),
        (["recover", "--db", "signof.db"], "database_missing"),
        (["requests", "list", "--db", "postgresql//typo"], "invalid_database_url"),
        (["requests", "list", "--db", "missing-dir/signoff.db"], "database_missing"),
    ]
    for args, code in cases:
        done = subprocess.run([str(EXE), *args, "--json"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert json.loads(done.stdout)["error"]["code"] == code, (args, done.stdout)
        assert done.stderr.startswith(f"signoff: error [{code}]: "), done.stderr
        assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "signof.db").exists()
    assert not (tmp_path / "postgresql").exists()
    assert not (tmp_path / "missing-dir").exists()
    assert list(tmp_path.iterdir()) == []
