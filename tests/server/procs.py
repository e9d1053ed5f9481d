"""Real ``signoff serve`` processes on SQLite and PostgreSQL, for tests that must cross
real HTTP into a real server (issue 12's Done-when).

``live`` (a fixture, parametrized over both backends) gives a directory with a starter
policy, a migrated database holding an admin, two approvers with role ``ops``, an
approver without roles and an agent — each with its token, made by the real CLI — and a
running server on a free port. ``live.start()`` starts another server on the same
database (PostgreSQL: a second machine; SQLite: a second process on the same file).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from kit import postgres_available

EXE = Path(sys.executable).with_name("signoff")
PG = os.environ.get("SIGNOFF_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
USERS = {"boss": ("admin", ""), "ann": ("approver", "ops"), "bob": ("approver", "ops"),
         "cy": ("approver", ""), "bot": ("agent", "")}


def signoff(*args: str, cwd: Path, check: bool = True, timeout: float = 60,
            env: dict[str, str] | None = None, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    """Run the real ``signoff`` command."""
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, check=check, input=stdin,
                          env={**os.environ, **(env or {})})


def pg_admin_dsn() -> str:
    """The PostgreSQL to make test databases in; skips the test when there is none."""
    problem = postgres_available(PG)
    if problem:
        pytest.skip(problem)
    return PG


@contextlib.contextmanager
def database(backend: str, directory: Path) -> Iterator[str]:
    """A fresh, empty database URL of ``backend`` (dropped afterwards)."""
    if backend == "sqlite":
        yield str(directory / "signoff.db")
        return
    import psycopg

    admin = pg_admin_dsn()
    name = "signoff_t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield admin.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[str]
    start_line: dict[str, Any]

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kwargs)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


WARNING = "signoff: warning:"  # the one line serve and init print about the trust boundary


def start_server(db: str, cwd: Path, *extra: str, env: dict[str, str] | None = None) -> Server:
    """``signoff serve --json`` on a free port; returns once ``/healthz`` answers 200."""
    proc = subprocess.Popen([str(EXE), "serve", "--db", db, "--port", "0", "--json", *extra],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    first = proc.stdout.readline()
    while first.startswith(WARNING):  # a policy or database in the workspace: stderr, merged
        first = proc.stdout.readline()
    try:
        start_line = json.loads(first)
    except ValueError:
        rest = proc.stdout.read() if proc.poll() is not None else ""
        proc.kill()
        raise AssertionError(f"serve did not start: {first}{rest}") from None
    server = Server(url=start_line["url"], proc=proc, start_line=start_line)
    deadline = time.monotonic() + 15
    while True:
        try:
            if httpx.get(server.url + "/healthz", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            server.stop()
            raise AssertionError("the server did not come up")
        time.sleep(0.05)


@dataclass
class Live:
    """A running server over a database of ``backend``, with users and their tokens."""

    backend: str
    db: str
    cwd: Path
    tokens: dict[str, str]
    server: Server
    others: list[Server] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, user: str | None = None, **kwargs: Any) -> httpx.Client:
        return self.server.client(self.tokens[user] if user else None, **kwargs)

    def cli(self, *args: str, check: bool = True, env: dict[str, str] | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """``signoff ARGS --db <this database>``."""
        return signoff(*args, "--db", self.db, cwd=self.cwd, check=check, env=env,
                       stdin=stdin)

    def start(self, *extra: str) -> Server:
        """Another server on the same database."""
        server = start_server(self.db, self.cwd, *extra)
        self.others.append(server)
        return server


def prepare(backend: str, db: str, cwd: Path, policy: str | None = None) -> dict[str, str]:
    """Policy (``policy`` or the starter), migrated database and the users of ``USERS``."""
    if policy is None:
        signoff("init", "signoff.toml", "--root", str(cwd), cwd=cwd)
    else:
        (cwd / "signoff.toml").write_text(policy.replace("{root}", str(cwd)), "utf-8")
    signoff("db", "migrate", "--db", db, cwd=cwd)
    tokens = {}
    for name, (kind, roles) in USERS.items():
        added = signoff("users", "add", name, "--kind", kind, "--roles", roles, "--db", db,
                        "--json", cwd=cwd)
        tokens[name] = json.loads(added.stdout)["token"]
    return tokens


@contextlib.contextmanager
def live_server(backend: str, directory: Path, policy: str | None = None) -> Iterator[Live]:
    with database(backend, directory) as db:
        tokens = prepare(backend, db, directory, policy)
        server = start_server(db, directory)
        live = Live(backend=backend, db=db, cwd=directory, tokens=tokens, server=server)
        try:
            yield live
        finally:
            for other in live.others:
                other.stop()
            server.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    """A real ``signoff serve`` on each backend, with users (see ``USERS``)."""
    with live_server(request.param, tmp_path) as running:
        yield running
