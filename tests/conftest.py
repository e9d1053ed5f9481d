"""Shared fixtures: a policy for kernel tests and a store per backend.

``store`` is parametrised over SQLite and PostgreSQL. PostgreSQL tests talk to the real
server at ``SIGNOFF_TEST_PG`` (default 127.0.0.1:5432, user postgres); each test gets a
schema of its own, as migration left it: a finished test's schema is emptied and reused by
the next test of the same process when its structure is untouched, else dropped (``kit``).
Without a reachable server those tests skip and say why; the run's header says what was
found.
"""

from __future__ import annotations

import os
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit import (
    CHROMIUM,
    KERNEL_POLICY,
    PG_DSN,
    drop_spare_schemas,
    make_store,
    postgres_available,
    redacted_dsn,
    release_store,
)
from signoff.notify import notifier
from signoff.policy import Policy
from signoff.store.base import Store
from signoff.store.postgres import PostgresStore

_PG_PROBLEM = postgres_available()

# What ``pytest`` runs with no ``-m`` (pyproject's addopts). Naming tests (``file::test``)
# runs them whatever their markers: a slow test asked for by name is not left out.
DEFAULT_MARKS = "not slow"

# Reading the audit seals what was committed first, waiting up to 1 s for transactions
# that hold it back. PostgreSQL holds back every event behind the oldest running
# transaction of the whole server, and the test server is shared (parallel workers, other
# suites): here a read waits for up to 30 s, so a busy server makes a test slower, never
# wrong. What the tests prove is unchanged: every event sealed, the chain verified.
SEAL_WAIT = 30.0
PostgresStore.seal.__kwdefaults__ = {"wait": SEAL_WAIT}
notifier.SEAL_WAIT = SEAL_WAIT  # a notifier's pass fans out what it has sealed


def _named_tests(config: pytest.Config) -> bool:
    return any("::" in arg for arg in config.args)


def pytest_configure(config: pytest.Config) -> None:
    # A server started by a test keeps its signing key here, never in the real home
    # (signoff.keys.default_path); subprocesses inherit it.
    if not os.environ.get("SIGNOFF_TEST_DATA_HOME"):
        os.environ["SIGNOFF_TEST_DATA_HOME"] = os.environ["XDG_DATA_HOME"] = \
            tempfile.mkdtemp(prefix="signoff-test-data-")
    if config.option.markexpr == DEFAULT_MARKS and _named_tests(config):
        config.option.markexpr = ""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` runs named tests in this process: starting workers costs more."""
    return 0 if _named_tests(config) else None


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say what the run found: the tests of whatever is missing skip (``-ra`` counts them)."""
    pg = (f"PostgreSQL: {redacted_dsn()} (SIGNOFF_TEST_PG)" if not _PG_PROBLEM else
          f"PostgreSQL: none; its tests skip ({_PG_PROBLEM}). Set SIGNOFF_TEST_PG")
    browser = (f"Chromium: {CHROMIUM} (SIGNOFF_CHROMIUM), for the browser tests (slow)"
               if CHROMIUM.exists() else
               f"Chromium: none at {CHROMIUM}; the browser tests (slow) skip. `apt-get install "
               "chromium`, or set SIGNOFF_CHROMIUM")
    marks = config.option.markexpr
    left = (f"Selected: -m {marks!r}; CI runs the default, then `-m slow`; `-m ''` runs "
            "every test" if marks else "Selected: every test")
    return [pg, browser, left]


@pytest.fixture
def busy() -> Iterator[int]:
    """A port this test's own process holds, bound and listening (a port in use)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def policy(workspace: Path) -> Policy:
    return Policy.from_toml(KERNEL_POLICY.format(root=workspace), source="kernel.toml")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres" and _PG_PROBLEM:
        pytest.skip(_PG_PROBLEM)
    return str(request.param)


def _owned(backend: str, tmp_path: Path) -> Iterator[Store]:
    created = make_store(backend, tmp_path, reuse=True)
    try:
        yield created
    finally:
        release_store(created)


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[Store]:
    yield from _owned(backend, tmp_path)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """For tests of a SQLite-only mechanism."""
    yield from _owned("sqlite", tmp_path)


@pytest.fixture
def postgres_store(tmp_path: Path) -> Iterator[Store]:
    """For tests of a PostgreSQL-only mechanism (skipped, with the reason, without a server)."""
    if _PG_PROBLEM:
        pytest.skip(_PG_PROBLEM)
    yield from _owned("postgres", tmp_path)


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """A PostgreSQL database of the test's own (dropped after), as a ``postgresql://`` URL: a
    store without ``schema=`` puts its tables in its ``public`` schema."""
    if _PG_PROBLEM:
        pytest.skip(_PG_PROBLEM)
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict

    name = "signoff_t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    parts = conninfo_to_dict(PG_DSN)
    try:
        yield (f"postgresql://{parts.get('user', 'postgres')}@{parts.get('host', '127.0.0.1')}:"
               f"{parts.get('port', 5432)}/{name}")
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    drop_spare_schemas()
