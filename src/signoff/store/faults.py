"""Database failures as typed errors: what the client may do about them, and nothing more.

A full disk is not a bug, and a client that is told ``500 internal_error``
cannot know it should simply try again. Every driver error that reaches a
store's boundary is turned here into either

* a ``StoreError`` (HTTP 503 with ``Retry-After``) when the database failed —
  ``store_full`` (no space), ``store_read_only``, ``store_busy`` (no
  connection or lock in time: PostgreSQL's connection limit, SQLite's busy
  timeout), ``store_unavailable`` (unreachable, I/O error, anything else) —
  the transaction was rolled back, so the same request may simply be sent
  again; or
* an ``InvalidInput`` (422) when the database refused a value (a NUL, an
  index row too large): the input contract (``signoff.inputs``) should have
  refused it first; this is the backstop, never a 500.

Messages name the condition, not the driver's text: database internals stay
in the server's log (``cause`` keeps the original for it).
"""

from __future__ import annotations

import sqlite3
from typing import NoReturn

from signoff.errors import Conflict, InvalidInput, SignoffError, StoreError

_TEXT = {
    "store_full": "the database has no space left; nothing was written",
    "store_read_only": "the database is read-only; nothing was written",
    "store_busy": "the database is busy (no connection or lock in time); nothing was written",
    "store_unavailable": "the database is unavailable; nothing was written",
}
CODES = frozenset(_TEXT)  # the typed store failures (a client may send the same again)
_SQLITE = {sqlite3.SQLITE_FULL: "store_full", sqlite3.SQLITE_READONLY: "store_read_only",
           sqlite3.SQLITE_BUSY: "store_busy", sqlite3.SQLITE_LOCKED: "store_busy",
           sqlite3.SQLITE_PERM: "store_read_only"}
_PG_STATES = {"53100": "store_full", "25006": "store_read_only", "53300": "store_busy",
              "57P03": "store_unavailable", "53200": "store_busy"}
_PG_BUSY_TEXT = ("too many clients", "too many connections", "remaining connection slots")


def store_error(code: str, *, what: str | None = None) -> StoreError:
    text = _TEXT[code]
    return StoreError(f"{what}: {text}" if what else text, code=code)


def reraise(exc: BaseException, what: str) -> NoReturn:
    """Raise the typed error for driver exception ``exc`` (saying ``what`` failed), or
    ``exc`` itself when it is not a database failure (a constraint the caller handles)."""
    typed = classify(exc)
    if typed is None or typed is exc:
        raise exc
    if isinstance(typed, StoreError) and typed.code in _TEXT:
        typed = store_error(typed.code, what=what)
    raise typed from exc


def classify(exc: BaseException) -> SignoffError | None:
    """The typed error for a driver exception, or ``None`` if ``exc`` is not one (a
    ``SignoffError`` is returned as it is). Constraint violations are not classified:
    the stores turn the one they expect into a ``Conflict``."""
    if isinstance(exc, SignoffError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return _sqlite(exc)
    if type(exc).__module__.split(".")[0] in ("psycopg", "psycopg_pool"):
        return _postgres(exc)
    return None


def _sqlite(exc: sqlite3.Error) -> SignoffError | None:
    if isinstance(exc, sqlite3.IntegrityError):
        return None
    primary = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    if primary == sqlite3.SQLITE_TOOBIG:
        return InvalidInput("a value is too large to store", code="too_long")
    code = _SQLITE.get(primary)
    if code is None:
        text = str(exc).lower()  # errors raised before a statement ran carry no code
        code = ("store_full" if "disk is full" in text else
                "store_read_only" if "readonly" in text or "read-only" in text else
                "store_busy" if "locked" in text else "store_unavailable")
    error = store_error(code)
    error.__cause__ = exc
    return error


def _postgres(exc: BaseException) -> SignoffError | None:
    import psycopg  # noqa: PLC0415 (only PostgreSQL's errors come here)
    import psycopg_pool  # noqa: PLC0415

    if isinstance(exc, psycopg.IntegrityError):
        return None
    state = getattr(exc, "sqlstate", None) or ""
    if state == "SO409":  # a kept-back compare-and-set matched no row (signoff.store.pgbatch)
        conflict = Conflict("the row changed underneath this transaction; nothing was "
                            "written", code="changed_underneath")
        conflict.__cause__ = exc
        return conflict
    if isinstance(exc, psycopg.errors.ProgramLimitExceeded):  # e.g. an index row too large
        return InvalidInput("a value is too large to store", code="too_long")
    if isinstance(exc, psycopg.DataError) or state.startswith("22"):
        return InvalidInput("a value could not be stored (NUL, or out of range)",
                            code="invalid_input")
    if isinstance(exc, psycopg_pool.PoolTimeout):
        code = "store_busy"
    elif state in _PG_STATES:
        code = _PG_STATES[state]
    elif any(text in str(exc) for text in _PG_BUSY_TEXT):
        code = "store_busy"  # refused at connect, before a session (and a SQLSTATE) existed
    elif isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError
                    | psycopg.InternalError):
        code = "store_unavailable"
    else:
        return None
    error = store_error(code)
    error.__cause__ = exc
    return error
