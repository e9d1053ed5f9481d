"""Keyset pages of requests: newest first, each page after the last one's key.

A page is ``ORDER BY created_at DESC, id`` up to ``limit`` rows; the next page starts
after the last row's ``(created_at, id)``, so it costs the same at row one million as at
row one (an ``OFFSET`` reads and throws away every row before it), and a request created
while someone pages never shifts what they see next. The cursor handed out is that key,
opaque to clients (URL-safe base64 of JSON) and checked when it comes back.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass

from signoff.errors import InvalidInput
from signoff.model import ApprovalRequest, RequestStatus, Risk

CURSOR_MAX = 400  # characters: a key is a time and an id


@dataclass(frozen=True, slots=True)
class RequestQuery:
    """Which requests a list shows; every field narrows it (``None``: any)."""

    status: RequestStatus | None = None
    risk: Risk | None = None
    tool: str | None = None
    thread_id: str | None = None
    call_id: str | None = None  # the id the agent gave its call (unique per thread)
    requester: str | None = None  # the principal or the agent who asked
    principal: str | None = None  # the authenticated asker only (an agent's own calls)
    since: float | None = None  # created at or after (epoch seconds)
    until: float | None = None  # created before
    text: str | None = None  # in the id, tool, summary, description or thread id

    def where(self) -> tuple[list[str], list[object]]:
        """SQL conditions (``?`` placeholders) and their parameters."""
        clauses: list[str] = []
        params: list[object] = []
        for column, value in (("status", self.status and self.status.value),
                              ("risk", self.risk and self.risk.value), ("tool", self.tool),
                              ("thread_id", self.thread_id), ("call_id", self.call_id)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if self.requester is not None:
            clauses.append("(principal = ? OR agent = ?)")
            params += [self.requester, self.requester]
        if self.principal is not None:
            clauses.append("principal = ?")
            params.append(self.principal)
        if self.since is not None:
            clauses.append("created_at >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("created_at < ?")
            params.append(self.until)
        if self.text:
            pattern = "%" + self.text.replace("\\", "\\\\").replace("%", "\\%").replace(
                "_", "\\_") + "%"
            clauses.append("(" + " OR ".join(
                f"LOWER({c}) LIKE LOWER(?) ESCAPE '\\'" for c in _SEARCHED) + ")")
            params += [pattern] * len(_SEARCHED)
        return clauses, params


_SEARCHED = ("id", "tool", "summary", "COALESCE(description, '')", "COALESCE(thread_id, '')")


def after_key(key: tuple[float, str]) -> tuple[str, list[object]]:
    """The condition of the rows after ``key`` in ``created_at DESC, id`` order."""
    created_at, request_id = key
    return "(created_at < ? OR (created_at = ? AND id > ?))", [created_at, created_at,
                                                              request_id]


def cursor_of(request: ApprovalRequest) -> str:
    raw = json.dumps([request.created_at, request.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_cursor(text: str) -> tuple[float, str]:
    """The key a cursor holds; ``invalid_cursor`` for anything this module did not make."""
    bad = InvalidInput("the cursor is not one this server handed out: start from the first "
                       "page (no cursor)", code="invalid_cursor")
    if not text or len(text) > CURSOR_MAX or not text.isascii():
        raise bad
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise bad from None
    if (not isinstance(value, list) or len(value) != 2
            or not isinstance(value[0], (int, float)) or isinstance(value[0], bool)
            or not math.isfinite(value[0]) or not isinstance(value[1], str)
            or not value[1] or "\x00" in value[1]):
        raise bad
    return float(value[0]), value[1]
