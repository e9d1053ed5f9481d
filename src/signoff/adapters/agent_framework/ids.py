"""Call ids a decision can be bound to: one per call, never reused in a conversation.

A request, the framework's approval request and the function result all find their call
by its id. Agent Framework runs every call of a turn, two calls sharing an id included
(it tells them apart by its own occurrence id), so the model turn (``turns``) marks the
ids that cannot stand for one call — repeated in the turn, or used by an earlier turn of
the conversation — and every call carrying one is refused before the gate is asked: which
of them the model meant is not for the gate to guess (as the other adapters do). Without
a model turn seen (a resume in another process), the occurrences this process met still
refuse a second call of one id.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any

from agent_framework import Content, Message

CALLS_REMEMBERED = 10_000  # (thread, call id) entries kept per kind

Key = tuple[str | None, str]


def _calls(messages: Iterable[Message]) -> list[Content]:
    return [c for m in messages for c in m.contents if c.type == "function_call"]


class CallIds:
    """The ids of a thread that may not run, and the occurrence each id first had."""

    def __init__(self) -> None:
        self._unbindable: dict[Key, str] = {}  # → why
        self._occurrences: dict[Key, str] = {}

    def check_turn(self, thread: str | None, turn: Iterable[Message],
                   history: Iterable[Message]) -> None:
        """Mark the ids of the model's ``turn`` that are repeated in it or used by an
        earlier turn of ``history``."""
        ids = [str(c.call_id) for c in _calls(turn) if c.call_id]
        if not ids:
            return
        used = {str(c.call_id) for c in _calls(history) if c.call_id}
        counts = Counter(ids)
        for call_id in ids:
            if call_id in used:
                self._keep(self._unbindable, (thread, call_id), "used by an earlier turn")
            elif counts[call_id] > 1:
                self._keep(self._unbindable, (thread, call_id), "repeated in its turn")

    def unbindable(self, thread: str | None, call_id: str) -> str | None:
        """Why a call with this id may not run, or ``None``."""
        return self._unbindable.get((thread, call_id))

    def reused(self, thread: str | None, call_id: str, occurrence: Any) -> bool:
        """An id another call of this thread already carried (the framework gives each
        call its own occurrence id)."""
        key = (thread, call_id)
        seen = self._occurrences.get(key)
        mine = str(occurrence) if occurrence is not None else f"none:{uuid.uuid4().hex}"
        if seen is not None:
            return seen != mine
        self._keep(self._occurrences, key, mine)
        return False

    @staticmethod
    def _keep(table: dict[Key, str], key: Key, value: str) -> None:
        table[key] = value
        while len(table) > CALLS_REMEMBERED:
            table.pop(next(iter(table)))
