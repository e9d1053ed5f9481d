"""Shared fixtures: a policy for kernel tests and a store per backend.

``store`` is parametrised over SQLite and PostgreSQL. PostgreSQL tests talk to
the real server at ``SIGNOFF_TEST_PG`` (default 127.0.0.1:5432, user
postgres); each test gets its own schema, dropped afterwards. Without a
reachable server those tests skip and say why.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit import KERNEL_POLICY, PG_DSN, make_store, postgres_available
from signoff.policy import Policy
from signoff.store.base import Store

_PG_PROBLEM = postgres_available()


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
    created = make_store(backend, tmp_path)
    try:
        yield created
    finally:
        created.close()
        drop = getattr(created, "drop_schema", None)
        if drop is not None:
            drop()


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
