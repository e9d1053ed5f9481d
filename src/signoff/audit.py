"""The tamper-evident audit log: an append-only hash chain.

Each event's hash covers the previous event's hash and the event's own
canonical (RFC 8785) content, so changing, removing or reordering any event
breaks every hash after it. ``verify`` walks the chain and names the first
index that does not check out. Stores refuse UPDATE and DELETE on the table
(SQLite triggers, PostgreSQL trigger and privileges) but for a purged prefix: a
retention purge records a checkpoint first and the chain is verified from it
(``signoff.store.retention``). The chain catches what gets past them (a dropped
trigger, a hand-edited file).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from signoff import jcs

GENESIS = "sha256:" + "0" * 64


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEvent:
    index: int  # 1, 2, 3, … without gaps
    at_us: int  # server clock, microseconds since the epoch
    kind: str  # request.created, decision.recorded, request.approved, call.allowed, …
    request_id: str | None
    actor: str | None
    data: str  # canonical JSON text
    prev_hash: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "at_us": self.at_us, "kind": self.kind,
                "request_id": self.request_id, "actor": self.actor,
                "data": json.loads(self.data), "prev_hash": self.prev_hash,
                "hash": self.hash}


def to_us(seconds: float) -> int:
    """Audit timestamps are integer microseconds: exact in every store and in JSON."""
    return round(seconds * 1_000_000)


def canonical_data(data: Mapping[str, Any]) -> str:
    """RFC 8785 text of an event's data (``signoff.jcs``: fast for plain values)."""
    return jcs.text(data)


_ASCII_COMPACT = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
_ascii_string = json.encoder.encode_basestring_ascii


def chain_hash(prev_hash: str, *, index: int, at_us: int, kind: str, request_id: str | None,
               actor: str | None, data: str) -> str:
    # A JSON array of integers, strings and nulls: one unambiguous byte string per event
    # (``data`` is already canonical text), cheap enough for every state change.
    if type(index) is int and type(at_us) is int and type(kind) is str \
            and type(data) is str and type(request_id) in _STR_OR_NONE \
            and type(actor) in _STR_OR_NONE:
        # The same bytes as the general form below, without building a list to encode.
        text = (f"[{index},{at_us},{_ascii_string(kind)},"
                f"{'null' if request_id is None else _ascii_string(request_id)},"
                f"{'null' if actor is None else _ascii_string(actor)},{_ascii_string(data)}]")
    else:
        text = _ASCII_COMPACT([index, at_us, kind, request_id, actor, data])
    body = text.encode("ascii")
    return "sha256:" + hashlib.sha256(prev_hash.encode("ascii") + b"\n" + body).hexdigest()


_STR_OR_NONE = (str, type(None))


@dataclass(frozen=True, slots=True)
class Verification:
    ok: bool
    count: int
    first_bad: int | None = None
    reason: str | None = None
    # Committed events not sealed into the chain yet (PostgreSQL seals after commit; a
    # running transaction holds back the events of every later one): checked once sealed.
    unsealed: int = 0
    unsealed_since_us: int | None = None
    # The checkpoint the chain was checked from: the last event a purge removed (0: none).
    anchor: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "count": self.count, "first_bad": self.first_bad,
                "reason": self.reason, "unsealed": self.unsealed,
                "unsealed_since_us": self.unsealed_since_us, "anchor": self.anchor}


def verify(events: Iterable[AuditEvent], *, head: tuple[int, str] | None = None,
           anchor: tuple[int, str] | None = None) -> Verification:
    """Check the chain; report the first bad index (a gap, a changed field, a broken link).

    ``head`` is the store's record of the last index and hash (``Store.audit_head()``):
    with it, events removed from the *end* are caught too, which no chain can show alone.
    ``anchor`` is the newest retention checkpoint (index and hash of the last purged
    event, ``signoff.store.retention``): the chain is checked from the event after it.
    """
    if anchor is not None and anchor[0] > 0:
        result = _walk(events, head, anchor[0] + 1, anchor[1])
        return dataclasses.replace(result, anchor=anchor[0])
    return _walk(events, head, 1, GENESIS)


def _walk(events: Iterable[AuditEvent], head: tuple[int, str] | None, expected: int,
          prev: str) -> Verification:
    count = 0
    for event in events:
        count += 1
        if event.index != expected:
            return Verification(False, count, expected,
                                f"event {expected} is missing (next is {event.index})")
        if event.prev_hash != prev:
            return Verification(False, count, event.index, "link to the previous event broken")
        recomputed = chain_hash(prev, index=event.index, at_us=event.at_us, kind=event.kind,
                                request_id=event.request_id, actor=event.actor, data=event.data)
        if recomputed != event.hash:
            return Verification(False, count, event.index, "content does not match its hash")
        prev = event.hash
        expected += 1
    if head is not None:
        last = expected - 1
        head_index, head_hash = head
        if head_index > last:
            return Verification(False, count, last + 1,
                                f"the log ends at {last} but its head records {head_index}")
        if head_index < last or head_hash != prev:
            return Verification(False, count, head_index if head_index < last else last,
                                "the recorded head does not match the last event")
    return Verification(True, count)
