"""The Store/Tx contract every backend must pass (``conformance``), run on a real SQLite file
and a real PostgreSQL schema. What one backend does its own way is tested beside it
(``test_sqlite_store``, ``test_postgres_store``, ``test_sealer``, …)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import psycopg
import pytest
from conformance import Harness, StoreContract

from backdoor import raw
from kit import make_store, twin_store
from signoff.store import postgres, sqlite
from signoff.store.base import Store
from signoff.store.schema import Migration


def sql_harness(store: Store, backend: str, tmp_path: Path) -> Harness:
    """signoff's own backends: the fixtures' store, a connection of the test's own, and a
    database made by older migrations (the module's ``MIGRATIONS`` patched while it is)."""

    def made_by(migrations: Sequence[Migration]) -> Store:
        where = tmp_path / "older"
        where.mkdir(exist_ok=True)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sqlite, "MIGRATIONS", tuple(migrations))
            patch.setattr(postgres, "MIGRATIONS", tuple(migrations))
            return make_store(backend, where)

    def lengthen_waits(monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(postgres, "WAIT_SLICE", 30.0)

    return Harness(store=store, twin=twin_store, refused=(sqlite3.DatabaseError, psycopg.Error),
                   connect=raw,
                   undefined_table=(sqlite3.OperationalError, psycopg.errors.UndefinedTable),
                   made_by=made_by, lengthen_waits=lengthen_waits)


class TestSqlite(StoreContract):
    @pytest.fixture
    def harness(self, sqlite_store: Store, tmp_path: Path) -> Harness:
        return sql_harness(sqlite_store, "sqlite", tmp_path)


class TestPostgres(StoreContract):
    @pytest.fixture
    def harness(self, postgres_store: Store, tmp_path: Path) -> Harness:
        return sql_harness(postgres_store, "postgres", tmp_path)
