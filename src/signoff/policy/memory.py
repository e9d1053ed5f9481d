"""What the policy remembers of past answers: humans' rejections and grants, and what a
call already received (its request, its auto review).

``evaluate`` stays pure by reading this through a small protocol; the
in-memory ``Memory`` serves tests and the CLI, and the durable stores
implement the same two methods.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from signoff.errors import ConfigurationError
from signoff.model import Grant, GrantScope, RecalledCall, Rejection

__all__ = ["DecisionMemory", "Memory", "RecalledCall"]


@runtime_checkable
class DecisionMemory(Protocol):
    def rejection_for(self, thread_id: str, tool: str, args_hash: str) -> Rejection | None:
        """The earlier human rejection of exactly this call in this thread, if any."""
        ...

    def grants_for(
        self, *, thread_id: str | None, session_id: str | None, tool: str
    ) -> Sequence[Grant]:
        """Grants that may apply to this tool in this thread or session (expiry is judged
        by the caller against its clock)."""
        ...

    def recall_call(self, thread_id: str, call_id: str) -> RecalledCall | None:
        """What this call id already received in this thread (a resume proposes it again)."""
        ...


class Memory:
    """Thread-safe in-memory ``DecisionMemory``."""

    def __init__(
        self, rejections: Iterable[Rejection] = (), grants: Iterable[Grant] = ()
    ) -> None:
        self._lock = threading.Lock()
        self._rejections: dict[tuple[str, str, str], Rejection] = {}
        self._grants: dict[str, Grant] = {}
        for rejection in rejections:
            self.add_rejection(rejection)
        for grant in grants:
            self.add_grant(grant)

    def add_rejection(self, rejection: Rejection) -> None:
        with self._lock:
            key = (rejection.thread_id, rejection.tool, rejection.args_hash)
            self._rejections[key] = rejection

    def add_grant(self, grant: Grant) -> None:
        with self._lock:
            self._grants[grant.id] = grant

    def rejection_for(self, thread_id: str, tool: str, args_hash: str) -> Rejection | None:
        if not self._rejections:
            return None
        return self._rejections.get((thread_id, tool, args_hash))

    def recall_call(self, thread_id: str, call_id: str) -> RecalledCall | None:
        return None  # nothing is proposed through an in-memory policy

    def grants_for(
        self, *, thread_id: str | None, session_id: str | None, tool: str
    ) -> Sequence[Grant]:
        if not self._grants:
            return ()
        with self._lock:
            grants = list(self._grants.values())
        return [
            g for g in grants
            if (g.scope is GrantScope.SESSION and g.session_id == session_id and session_id)
            or (g.scope is not GrantScope.SESSION and g.thread_id == thread_id and thread_id)
        ]

    @classmethod
    def from_file(cls, path: str | Path) -> Memory:
        """Load ``{"rejections": [...], "grants": [...]}`` (for ``signoff check --memory``)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"{path}: cannot read memory file: {exc}",
                                     code="memory_invalid") from exc
        if not isinstance(data, dict):
            raise ConfigurationError(f"{path}: must hold a JSON object", code="memory_invalid")
        try:
            rejections = [_rejection(r) for r in data.get("rejections", [])]
            grants = [_grant(g) for g in data.get("grants", [])]
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"{path}: bad entry: {exc}", code="memory_invalid") from exc
        return cls(rejections, grants)


def _rejection(raw: Mapping[str, Any]) -> Rejection:
    return Rejection(
        thread_id=str(raw["thread_id"]), tool=str(raw["tool"]), args_hash=str(raw["args_hash"]),
        reason=str(raw.get("reason", "rejected")),
        alternatives=tuple(str(a) for a in raw.get("alternatives", ())),
        request_id=raw.get("request_id"),
    )


def _grant(raw: Mapping[str, Any]) -> Grant:
    args = raw.get("args", {})
    if not isinstance(args, dict) or not all(isinstance(v, str) for v in args.values()):
        raise ValueError("grant args must map names to patterns")
    return Grant(
        id=str(raw["id"]), scope=GrantScope(raw.get("scope", "thread")), tool=str(raw["tool"]),
        args=args, thread_id=raw.get("thread_id"), session_id=raw.get("session_id"),
        expires_at=raw.get("expires_at"), max_uses=raw.get("max_uses"),
        uses=int(raw.get("uses", 0)),
    )
