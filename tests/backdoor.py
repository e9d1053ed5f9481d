"""A connection of the test's own to a store's database: writes through it go behind the
store's back, the way an attacker or a careless operator would (tampering tests)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from signoff.store.base import Store


@contextmanager
def raw(store: Store) -> Iterator[Any]:
    """An autocommit connection to the same database (and schema) as ``store``."""
    if store.backend == "sqlite":
        conn = sqlite3.connect(store.path, isolation_level=None)  # type: ignore[attr-defined]
        try:
            yield conn
        finally:
            conn.close()
    else:
        schema = store.schema  # type: ignore[attr-defined]
        with psycopg.connect(store.dsn, autocommit=True,  # type: ignore[attr-defined]
                             options=f"-c search_path={schema}") as conn:
            yield conn
