"""Store faults are typed and retryable, under real ``signoff serve`` processes: a full disk
(SQLite on a small tmpfs that fills), a read-only database, and a saturated PostgreSQL
(its connection limit reached) answer 503 with a stable code and ``Retry-After`` — never a
500 — write nothing half, and the server recovers when the cause goes away. At start-up
the same faults are one typed line and exit 2, no traceback."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from procs import EXE, WARNING, Server, pg_admin_dsn, prepare, start_server

LEAKS = re.compile(r"psycopg|sqlite|Traceback|FATAL|disk is full|too many", re.I)


@contextlib.contextmanager
def mounted(target: Path, *options: str) -> Iterator[Path]:
    """``mount`` (as root) for the duration; skips the test where mounting is not allowed."""
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", *options, str(target)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip() or done.returncode}): this "
                    "test needs root and a kernel that lets it mount a filesystem")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


def _fill(path: Path) -> None:
    """Write ``path`` until the filesystem holding it has no space left. Unbuffered: a
    buffered file would try the refused bytes again when it closes, and fail there."""
    with path.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 65536)
        except OSError:
            pass


def _propose(client: httpx.Client, call_id: str) -> httpx.Response:
    return client.post("/api/v1/calls", json={
        "tool": "execute", "args": {"command": "make build", "note": "n" * 20_000},
        "call_id": call_id, "context": {"thread_id": "t-full"}})


def _retryable_503(response: httpx.Response, *codes: str) -> dict[str, Any]:
    assert response.status_code == 503, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/problem+json")
    assert int(response.headers["retry-after"]) > 0
    assert not LEAKS.search(response.text), response.text
    body: dict[str, Any] = response.json()
    assert body["code"] in codes, body
    return body


def _serve_fails(db: str, cwd: Path, timeout: float = 60) -> dict[str, Any]:
    """``signoff serve`` that must not start: one typed line on stderr, exit 2."""
    done = subprocess.run([str(EXE), "serve", "--db", db, "--port", "0", "--json"], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines()
             if line.strip() and not line.startswith(WARNING)]
    assert len(lines) == 1 and lines[0].startswith("signoff: error ["), done.stderr
    error: dict[str, Any] = json.loads(done.stdout)["error"]
    return error


@pytest.mark.slow
def test_a_full_disk_is_503_store_full_writes_nothing_half_and_recovers(
        tmp_path: Path) -> None:
    small = tmp_path / "small"
    with mounted(small, "-t", "tmpfs", "-o", "size=4m", "tmpfs"):
        db = str(small / "signoff.db")
        tokens = prepare("sqlite", db, tmp_path)
        server = start_server(db, tmp_path)
        try:
            with server.client(tokens["bot"]) as bot, server.client(tokens["boss"]) as boss:
                assert _propose(bot, "c0").json()["status"] == "pending"
                _fill(small / "filler")
                answers = {f"c{i}": _propose(bot, f"c{i}") for i in range(1, 30)}
                assert all(r.status_code in (200, 503) for r in answers.values()), {
                    c: (r.status_code, r.text[:200]) for c, r in answers.items()}
                refused = sorted(c for c, r in answers.items() if r.status_code == 503)
                assert refused, "no write failed on a full disk"
                for call_id in refused:
                    _retryable_503(answers[call_id], "store_full")
                # Nothing half-written: exactly the answered calls exist, the log verifies,
                # and reads go on while the disk is full.
                stored = {r["call_id"] for r in boss.get(
                    "/api/v1/requests", params={"limit": 500}).json()["requests"]}
                assert stored == {"c0"} | {c for c, r in answers.items()
                                           if r.status_code == 200}
                assert boss.get("/api/v1/audit", params={"verify": "true"}).json()["verified"]
                assert boss.get("/healthz").status_code == 200
                (small / "filler").unlink()  # space again: the same requests go through
                for call_id in refused:
                    again = _propose(bot, call_id)
                    assert again.status_code == 200 and again.json()["status"] == "pending", (
                        again.text)
                stored = {r["call_id"] for r in boss.get(
                    "/api/v1/requests", params={"limit": 500}).json()["requests"]}
                assert stored == {"c0", *answers}
                assert boss.get("/api/v1/audit", params={"verify": "true"}).json()["verified"]
        finally:
            server.stop()
        _read_only(tmp_path, small, tokens)


def _read_only(tmp_path: Path, small: Path, tokens: dict[str, str]) -> None:
    """The same database seen through a read-only mount: a server on it reads, and refuses
    writes with 503 store_read_only; one that cannot even open it exits 2 saying so."""
    with mounted(tmp_path / "ro", "--bind", str(small)) as view:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], check=True)
        holder = sqlite3.connect(small / "signoff.db")  # keeps the WAL files in place
        try:
            holder.execute("SELECT COUNT(*) FROM requests").fetchone()
            reader = start_server(str(view / "signoff.db"), tmp_path)
            try:
                with reader.client(tokens["bot"]) as bot, \
                        reader.client(tokens["boss"]) as boss:
                    before = boss.get("/api/v1/requests", params={"limit": 500})
                    assert before.status_code == 200
                    _retryable_503(_propose(bot, "c-ro"), "store_read_only")
                    after = boss.get("/api/v1/requests", params={"limit": 500})
                    assert after.json() == before.json()
            finally:
                reader.stop()
        finally:
            holder.close()  # the last connection: the WAL files go
        error = _serve_fails(str(view / "signoff.db"), tmp_path)
        assert error["code"] == "store_read_only", error


def test_a_read_only_database_refuses_writes_with_store_read_only(tmp_path: Path) -> None:
    from signoff import Decision, Gate, Policy, SqliteStore, StoreError, ToolCall
    from signoff.policy import parse_policy

    store = SqliteStore(tmp_path / "ro.db")
    gate = Gate(Policy(parse_policy('[policy]\nunknown_tools = "ask"\n', source="p")), store)
    try:
        _, token = gate.add_user("ann")
        pending = gate.propose(ToolCall(id="c1", name="deploy", args={"env": "prod"}))
        assert pending.request is not None
        store._writer_connection().execute("PRAGMA query_only = ON")  # as a read-only file
        with pytest.raises(StoreError) as refused:
            gate.decide(pending.request.id, Decision.approve(),
                        identity=gate.authenticate(token))
        assert refused.value.code == "store_read_only" and refused.value.retry_after > 0
        assert store.get_request(pending.request.id).status.value == "pending"
        assert store.verify_audit().ok
    finally:
        gate.close()


@contextlib.contextmanager
def limited_role(admin: str, directory: Path) -> Iterator[tuple[str, str, Any]]:
    """A database owned by a role of its own, so that its connection limit can be reached
    without touching anyone else's: (the role's DSN, the role, an admin connection)."""
    import psycopg

    role = "signoff_r_" + uuid.uuid4().hex[:10]
    name = "signoff_t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"CREATE DATABASE {name} OWNER {role}")
        try:
            base = admin.rsplit("/", 1)[0].replace("postgres@", f"{role}@")
            yield f"{base}/{name}", role, conn
        finally:
            conn.execute(f"ALTER ROLE {role} CONNECTION LIMIT -1")
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.mark.slow
def test_a_saturated_postgresql_is_503_store_busy_and_the_server_recovers(
        tmp_path: Path) -> None:
    admin = pg_admin_dsn()
    if "postgres@" not in admin:
        pytest.skip("needs the trust-auth superuser DSN postgresql://postgres@…")
    with limited_role(admin, tmp_path) as (dsn, role, conn):
        tokens = prepare("postgres", dsn, tmp_path)
        # At start: no connection to be had → one typed line, exit 2, no traceback.
        conn.execute(f"ALTER ROLE {role} CONNECTION LIMIT 0")
        error = _serve_fails(dsn, tmp_path)
        assert error["code"] == "store_busy", error
        conn.execute(f"ALTER ROLE {role} CONNECTION LIMIT -1")
        server: Server = start_server(dsn, tmp_path)
        try:
            with server.client(tokens["bot"]) as bot, server.client(tokens["boss"]) as boss:
                assert _propose(bot, "c0").json()["status"] == "pending"
                # Saturated while running: the server's connections are gone and no new one
                # is let in.
                conn.execute(f"ALTER ROLE {role} CONNECTION LIMIT 0")
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE usename = %s", (role,))
                refused = []
                for i in range(1, 4):
                    answer = _propose(bot, f"c{i}")
                    _retryable_503(answer, "store_busy", "store_unavailable")
                    refused.append(f"c{i}")
                conn.execute(f"ALTER ROLE {role} CONNECTION LIMIT -1")
                deadline = time.monotonic() + 90
                while True:  # the pool reconnects by itself
                    answer = _propose(bot, "c1")
                    if answer.status_code == 200 or time.monotonic() > deadline:
                        break
                    _retryable_503(answer, "store_busy", "store_unavailable")
                    time.sleep(1)
                assert answer.status_code == 200, answer.text
                for call_id in refused[1:]:
                    assert _propose(bot, call_id).status_code == 200
                stored = {r["call_id"] for r in boss.get(
                    "/api/v1/requests", params={"limit": 500}).json()["requests"]}
                assert stored == {"c0", *refused}
                assert boss.get("/api/v1/audit", params={"verify": "true"}).json()["verified"]
        finally:
            server.stop()
