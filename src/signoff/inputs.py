"""The input contract: what every text field accepts, on every surface.

One module, used by the records (``RunContext``, ``Decision``), the kernel
(the policy's well-formed step), the HTTP server (bodies, path and query
parameters, headers) and the CLI, so that the same value is refused
everywhere with the same code — before a database can refuse it with a 500
or keep it where an approver cannot see it.

* **Identifiers** (thread, run, session, call, parent-call and request ids,
  principals, idempotency keys): 1–200 characters of visible ASCII, U+0021 to
  U+007E — letters, digits and punctuation; no space, no control character,
  nothing outside ASCII. That admits ``org/repo#12``, UUIDs,
  ``slack:C123/1700000000.123``, ``auth0|5f7c``, ``req_…``; it refuses what
  can hide in an id an approver reads (invisible or look-alike characters),
  what PostgreSQL cannot store (NUL) and what it cannot index (kilobytes).
* **Tool names**: 1–200 printable characters, none of them default-ignorable
  (a name that renders like another tool's is no name).
* **Text** (a call's description, a rejection's reason and alternatives, a
  response, evidence, intent, a reported error): up to a limit per field; no
  NUL, no lone surrogate (neither can be stored as UTF-8 text). Everything
  else is kept exactly and shown — the inbox flags what does not print as
  itself (``signoff.reveal``).
* **Indexes** (``Last-Event-ID``, ``?after=``): ASCII decimal digits, at most
  2^53−1.

Each refusal is an ``InvalidInput`` (HTTP 422) naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

from signoff.errors import InvalidInput

ID_MAX = 200
TOOL_MAX = 200
DESCRIPTION_MAX = 10_000
REASON_MAX = 10_000
MESSAGE_MAX = 10_000
ALTERNATIVE_MAX = 1_000
ALTERNATIVES_MAX = 20
EVIDENCE_MAX = 2_000
EVIDENCE_ITEMS = 50
INTENT_MAX = 2_000
PATTERN_MAX = 1_000  # a thread grant's argument pattern
SEARCH_MAX = 200  # a list's text search
ERROR_MAX = 100_000  # what a tool reports as its error
INDEX_MAX = 2**53 - 1
INDEX_DIGITS = len(str(INDEX_MAX))

ID_PATTERN = "^[!-~]+$"  # for JSON Schema (with maxLength ID_MAX)
_ID = re.compile(r"[!-~]{1,%d}" % ID_MAX)  # noqa: UP031 (a regex brace, not a format)
_DIGITS = re.compile(r"[0-9]+")
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


@cache
def _ignorable() -> Any:
    """The pattern of invisible characters, compiled when a tool name that is not ASCII is
    first judged (``regex`` has the Unicode property; importing it is most of this
    module's start)."""
    import regex  # noqa: PLC0415

    return regex.compile(r"\p{Default_Ignorable_Code_Point}")


# The codes of this contract (``InvalidInput.code``); documented in docs/server.md.
CODES = frozenset({"nul_character", "lone_surrogate", "too_long", "invalid_identifier",
                   "invalid_tool_name", "invalid_index", "invalid_input",
                   "invalid_args_hash"})  # signoff.shown


def identifier(field: str, value: Any) -> str:
    """``value`` if it is an identifier (see the module docstring); else ``InvalidInput``."""
    if type(value) is str and _ID.fullmatch(value):
        return value
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, not {type(value).__name__}",
                           code="invalid_identifier", field=field)
    if len(value) > ID_MAX:
        raise InvalidInput(f"{field} is {len(value)} characters long; at most {ID_MAX}",
                           code="too_long", field=field)
    if "\x00" in value:
        raise InvalidInput(f"{field} holds a NUL character", code="nul_character", field=field)
    if not value:
        raise InvalidInput(f"{field} is empty", code="invalid_identifier", field=field)
    bad = next(ch for ch in value if not "!" <= ch <= "~")
    raise InvalidInput(
        f"{field} holds {_name(bad)}; identifiers are 1–{ID_MAX} visible ASCII characters "
        "(letters, digits, punctuation; no spaces)", code="invalid_identifier", field=field)


CREDENTIAL_MAX = 1400  # a WebAuthn credential id (at most 1023 bytes) in base64url
CREDENTIAL_PATTERN = "^[A-Za-z0-9_-]+$"  # for JSON Schema (with maxLength CREDENTIAL_MAX)
_CREDENTIAL = re.compile(r"[A-Za-z0-9_-]{1,%d}" % CREDENTIAL_MAX)  # noqa: UP031


def credential_id(field: str, value: Any) -> str:
    """``value`` if it is a passkey's credential id (base64url, unpadded); else the codes of
    an identifier: ``too_long``, ``nul_character``, ``invalid_identifier``."""
    if type(value) is str and _CREDENTIAL.fullmatch(value):
        return value
    if isinstance(value, str) and len(value) > CREDENTIAL_MAX:
        raise InvalidInput(f"{field} is {len(value)} characters long; at most "
                           f"{CREDENTIAL_MAX}", code="too_long", field=field)
    if isinstance(value, str) and "\x00" in value:
        raise InvalidInput(f"{field} holds a NUL character", code="nul_character", field=field)
    raise InvalidInput(f"{field} is not a passkey's credential id (base64url)",
                       code="invalid_identifier", field=field)


def optional_identifier(field: str, value: Any) -> str | None:
    return None if value is None else identifier(field, value)


def text(field: str, value: Any, limit: int) -> str:
    """``value`` if it is text within ``limit`` characters, without NUL or lone surrogates."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, not {type(value).__name__}",
                           code="invalid_input", field=field)
    if len(value) > limit:
        raise InvalidInput(f"{field} is {len(value)} characters long; at most {limit}",
                           code="too_long", field=field)
    if not value.isascii() or "\x00" in value:
        found = _BAD_TEXT.search(value)
        if found is not None:
            if found.group() == "\x00":
                raise InvalidInput(f"{field} holds a NUL character", code="nul_character",
                                   field=field)
            raise InvalidInput(f"{field} holds a lone surrogate", code="lone_surrogate",
                               field=field)
    return value


def optional_text(field: str, value: Any, limit: int) -> str | None:
    return None if value is None else text(field, value, limit)


def texts(field: str, values: Iterable[Any], limit: int, items: int) -> tuple[str, ...]:
    """A list of texts: at most ``items`` of them, each within ``limit``."""
    if isinstance(values, str | bytes):
        raise InvalidInput(f"{field} must be a list of strings", code="invalid_input",
                           field=field)
    found = tuple(values)
    if len(found) > items:
        raise InvalidInput(f"{field} has {len(found)} entries; at most {items}",
                           code="too_long", field=field)
    return tuple(text(f"{field}[{i}]", v, limit) for i, v in enumerate(found))


def tool_name_problem(value: Any) -> str | None:
    """Why ``value`` is not a tool name, or ``None`` when it is one."""
    if not isinstance(value, str) or not value:
        return "a tool name must be a non-empty string"
    if len(value) > TOOL_MAX:
        return f"a tool name has at most {TOOL_MAX} characters"
    if not value.isprintable() or (not value.isascii() and _ignorable().search(value)):
        return "a tool name must be printable, without invisible characters"
    return None


def tool_name(field: str, value: Any) -> str:
    problem = tool_name_problem(value)
    if problem is not None:
        raise InvalidInput(f"{field}: {problem}", code="invalid_tool_name", field=field)
    return str(value)


def index(field: str, value: str) -> int:
    """An audit index written as ASCII decimal digits (``²`` and ``٣`` are not)."""
    if len(value) > INDEX_DIGITS or not _DIGITS.fullmatch(value) or int(value) > INDEX_MAX:
        raise InvalidInput(f"{field} must be an audit index: decimal digits, 0 … {INDEX_MAX}",
                           code="invalid_index", field=field)
    return int(value)


def stored_text(value: str, limit: int) -> str:
    """Text the system derived (a summary, a tool's own error message) made storable:
    NUL written as ``\\x00``, lone surrogates as U+FFFD, cut at ``limit``. Not for
    client input, which is refused instead: this is for text nobody can be asked to
    send again."""
    if not value.isascii() or "\x00" in value:
        value = _BAD_TEXT.sub(lambda m: "\\x00" if m.group() == "\x00" else "\ufffd", value)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _name(ch: str) -> str:
    import unicodedata  # noqa: PLC0415 (only for the message)

    label = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {label}" if label else "")
