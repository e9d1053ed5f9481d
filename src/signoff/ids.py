"""Identifiers that sort by creation time.

Request, decision and grant ids are primary keys in B-trees (SQLite ``WITHOUT ROWID``
tables, PostgreSQL indexes) and lead several other indexes. A random key lands on a
random leaf, so every insert dirties a different page and splits pages all over the
tree; a key that starts with the time lands at the right edge, where the pages a
transaction writes are the ones the previous one just wrote. Fewer pages per commit
means less to write and sync (``bench/roundtrip_bench.py`` counts them).

The layout is that of a UUIDv7 without the dashes: 48 bits of Unix milliseconds,
then 80 random bits, as 32 hex digits after the prefix. The random part keeps ids
unguessable; the time part reveals only what ``created_at`` already says.
"""

from __future__ import annotations

import os
import time


def new_id(prefix: str) -> str:
    """``prefix`` + 12 hex digits of milliseconds + 20 random hex digits."""
    return f"{prefix}{time.time_ns() // 1_000_000:012x}{os.urandom(10).hex()}"
