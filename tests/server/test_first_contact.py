"""First-contact traps a new user met (issue 12, item 8), each through the real command.

A bad ``[server]`` value, a database URL signoff does not speak, a PostgreSQL database
that does not exist or is not migrated, and a pipe closed early must each end in one
line with a stable code — never a traceback, never a 30-second wait, never success on
the wrong database.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from procs import database, pg_admin_dsn

EXE = Path(sys.executable).with_name("signoff")


def run(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EXE), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    run("init", "signoff.toml", "--root", str(tmp_path), cwd=tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader (`| head`, `| true`) is gone before we write
    try:
        done = subprocess.run([str(EXE), "check", "--tool", "execute", "--args",
                               '{"command": "ls -la src"}', "--explain"], cwd=tmp_path,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
                              check=False)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 141


@pytest.mark.slow
def test_a_server_table_of_the_wrong_type_is_a_typed_error(tmp_path: Path) -> None:
    run("init", "signoff.toml", "--root", str(tmp_path), cwd=tmp_path)
    policy = tmp_path / "signoff.toml"
    original = policy.read_text("utf-8")
    for line, code in (('port = "abc"', "invalid_port"), ("port = 70000", "invalid_port"),
                       ("long_poll_max = -1", "policy_invalid"),
                       ('allowed_hosts = "example.org"', "policy_invalid"),
                       ('public_url = "example.org"', "invalid_public_url")):
        policy.write_text(original + f"\n[server]\n{line}\n", "utf-8")
        done = run("serve", "--db", str(tmp_path / "x.db"), cwd=tmp_path)
        assert done.returncode == 2, (line, done.stderr)
        assert f"[{code}]" in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert line.split(" =")[0] in done.stderr or code == "invalid_port", done.stderr
    assert not (tmp_path / "x.db").exists()  # refused before any database was opened


@pytest.mark.slow
def test_a_database_url_signoff_does_not_speak_is_named(tmp_path: Path) -> None:
    done = run("requests", "list", "--db", "mysql://root@127.0.0.1/test", cwd=tmp_path)
    assert done.returncode == 2 and "[unsupported_database]" in done.stderr
    assert "mysql://" in done.stderr and "SQLite" in done.stderr
    assert "cannot open SQLite" not in done.stderr
    # sqlite:///path is the file at path (made by `db migrate`, not by a listing)
    target = tmp_path / "via-url.db"
    done = run("requests", "list", "--db", f"sqlite:///{target}", cwd=tmp_path)
    assert done.returncode == 2 and "[database_missing]" in done.stderr, done.stderr
    assert not target.exists()
    assert run("db", "migrate", "--db", f"sqlite:///{target}", cwd=tmp_path).returncode == 0
    done = run("requests", "list", "--db", f"sqlite:///{target}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert target.exists()


@pytest.fixture
def empty_pg(tmp_path: Path) -> Iterator[str]:
    with database("postgres", tmp_path) as url:
        yield url


def test_a_postgres_database_that_does_not_exist_is_named_at_once(tmp_path: Path) -> None:
    admin = pg_admin_dsn()
    name = "signoff_missing_" + uuid.uuid4().hex[:8]
    url = admin.rsplit("/", 1)[0] + "/" + name
    started = time.monotonic()
    done = run("requests", "list", "--db", url, cwd=tmp_path)
    took = time.monotonic() - started
    assert done.returncode == 2 and "[database_missing]" in done.stderr, done.stderr
    assert name in done.stderr and "createdb" in done.stderr
    assert "Traceback" not in done.stderr
    assert took < 10, f"took {took:.1f}s to say the database is missing"


@pytest.mark.slow
def test_the_schema_outdated_hint_migrates_the_database_it_names(empty_pg: str,
                                                                 tmp_path: Path) -> None:
    done = run("requests", "list", "--db", empty_pg, cwd=tmp_path)
    assert done.returncode == 2 and "[schema_outdated]" in done.stderr, done.stderr
    hint = re.search(r"`(signoff db migrate [^`]+)`", done.stderr)
    assert hint, done.stderr
    words = shlex.split(hint.group(1))
    assert words[:4] == ["signoff", "db", "migrate", "--db"]
    migrated = run(*words[1:], cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    assert not list(tmp_path.glob("*.db")), "the hint must not migrate a new SQLite file"
    again = run("requests", "list", "--db", empty_pg, cwd=tmp_path)
    assert again.returncode == 0 and "no requests" in again.stdout, again.stderr


def test_a_password_in_the_url_is_not_printed() -> None:
    from signoff.store.postgres import redacted

    assert redacted("postgresql://u:s3cret@h:5432/d") == "postgresql://u:***@h:5432/d"
    assert "s3cret" not in redacted("host=h password=s3cret dbname=d")
    assert redacted("postgresql://u@h/d") == "postgresql://u@h/d"
