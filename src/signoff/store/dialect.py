"""Where the two SQL databases differ under one ``SqlTx``: placeholders, row locks,
``RETURNING``, and whether audit events are chained inside the transaction (SQLite) or
sealed after it (PostgreSQL); and how a driver's exception becomes a typed one."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from signoff.errors import InvalidInput
from signoff.store.faults import classify


def typed(exc: Exception) -> Exception:
    """The typed error for a database failure or refusal (``signoff.store.faults``), or
    ``exc`` itself when it is none of those."""
    if isinstance(exc, UnicodeEncodeError):  # a lone surrogate cannot be UTF-8
        return InvalidInput("a value holds a lone surrogate", code="lone_surrogate")
    found = classify(exc)
    return exc if found is None else found


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    placeholder: str  # "?" or "%s"
    lock_suffix: str  # " FOR UPDATE" or ""
    skip_locked_suffix: str  # " FOR UPDATE SKIP LOCKED" or ""
    returning: bool = True  # UPDATE … RETURNING (SQLite from 3.35)
    # Events go to audit_pending and are chained after commit (signoff.store.sealer)
    # instead of being chained inside the transaction, under the database's write lock.
    seals_later: bool = False

    def sql(self, statement: str) -> str:
        return statement if self.placeholder == "?" else statement.replace("?", self.placeholder)


SQLITE = Dialect("sqlite", "?", "", "", returning=sqlite3.sqlite_version_info >= (3, 35))
POSTGRES = Dialect("postgres", "%s", " FOR UPDATE", " FOR UPDATE SKIP LOCKED",
                   seals_later=True)

