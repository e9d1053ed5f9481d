"""A connection of the test's own to a store's database: writes through it go behind the
store's back, the way an attacker or a careless operator would (tampering tests)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from signoff.audit import chain_hash
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


def rewrite_chain(store: Store, *, index: int, actor: str) -> None:
    """Give event ``index`` another actor and recompute every hash from it on, and the head:
    a rewrite the chain alone cannot show, done the way the database's owner could (the
    append-only triggers dropped or disabled first)."""
    sqlite = store.backend == "sqlite"
    mark = "?" if sqlite else "%s"
    with raw(store) as conn:
        if sqlite:
            conn.execute("DROP TRIGGER audit_no_update")
        else:
            conn.execute("ALTER TABLE audit DISABLE TRIGGER USER")
        rows = conn.execute("SELECT idx, at_us, kind, request_id, actor, data, prev_hash FROM "
                            f"audit WHERE idx >= {mark} ORDER BY idx", (index,)).fetchall()
        prev = rows[0][6]
        for idx, at_us, kind, request_id, was, data, _ in rows:
            now = actor if idx == index else was
            digest = chain_hash(prev, index=idx, at_us=at_us, kind=kind, request_id=request_id,
                                actor=now, data=data)
            conn.execute(f"UPDATE audit SET actor = {mark}, prev_hash = {mark}, hash = {mark} "
                         f"WHERE idx = {mark}", (now, prev, digest, idx))
            prev = digest
        conn.execute(f"UPDATE audit_head SET hash = {mark} WHERE id = 1", (prev,))
        if not sqlite:
            conn.execute("ALTER TABLE audit ENABLE TRIGGER USER")
