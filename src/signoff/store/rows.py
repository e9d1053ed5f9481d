"""Rows and the model: how an ``ApprovalRequest``, a decision, an audit event, a grant or
an identity becomes SQL values and comes back, the same on both backends.

Lists and maps are stored as canonical JSON text (sorted keys, no ASCII escaping), so
they compare and hash as they went in; enums as their values. Reading a request sets
the frozen dataclass's slots directly: forty fields per row, on every hot path.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from signoff.audit import AuditEvent
from signoff.identity import Identity, IdentityKind
from signoff.model import (
    ApprovalRequest,
    ApproveScope,
    DecisionKind,
    DecisionRecord,
    Grant,
    GrantScope,
    RequestStatus,
    ReviewMode,
    Risk,
)

REQUEST_COLUMNS = (
    "id", "call_id", "tool", "args", "args_hash", "status", "risk", "summary",
    "policy_version", "created_at", "updated_at", "thread_id", "run_id", "session_id",
    "parent_call", "principal", "agent", "description", "expected_effect", "evidence",
    "resource_versions", "roles", "approvals_required", "expires_at", "mandatory",
    "decision_id", "reasons", "review_mode", "approved_args", "approved_hash", "outcome_code",
    "outcome_reason", "alternatives", "response", "result", "error", "fencing_token",
    "lease_until", "executor", "version", "review", "waiter", "requires", "changes",
    "definition_hash", "passkey",
)
_JSON_FIELDS = frozenset({"evidence", "resource_versions", "roles", "reasons", "alternatives",
                          "review", "requires", "changes"})
DECISION_COLUMNS = ("id", "request_id", "kind", "approver", "created_at", "args_hash",
                    "reason", "alternatives", "args", "message", "scope", "assertion")
AUDIT_COLUMNS = "idx, at_us, kind, request_id, actor, data, prev_hash, hash"
GRANT_COLUMNS = ("id, scope, tool, args, thread_id, session_id, expires_at, max_uses, uses, "
                 "created_by, args_hash, definition_hash")


def _enum_value(value: enum.Enum) -> Any:
    return value.value


def encode(name: str, value: Any) -> Any:
    """A request field as its column holds it."""
    if name == "review":
        return _json_or_null(value)
    if name in _JSON_FIELDS:
        if not value:
            return "{}" if name == "resource_versions" else "[]"
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if name in ("mandatory", "passkey"):
        return int(bool(value))
    if isinstance(value, enum.Enum):
        return value.value
    return value


# ``json.dumps(value, ensure_ascii=False, sort_keys=True)``, the encoder built once.
dumps_sorted = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


def _json_list(value: Any) -> str:
    return dumps_sorted(list(value)) if value else "[]"


def _json_map(value: Any) -> str:
    return dumps_sorted(dict(value)) if value else "{}"


def _json_or_null(value: Any) -> str | None:
    return None if value is None else dumps_sorted(dict(value))


# Per column, how a field becomes a SQL value (``None``: as it is).
_SPECIAL: dict[str, Callable[[Any], Any]] = {
    "status": _enum_value, "risk": _enum_value, "review_mode": _enum_value, "mandatory": int,
    "passkey": int,
    "resource_versions": _json_map, "review": _json_or_null,
    **{name: _json_list for name in ("evidence", "roles", "reasons", "alternatives",
                                     "changes")},
    "requires": lambda value: dumps_sorted([list(pair) for pair in value]) if value else "[]",
}
ENCODERS: tuple[tuple[Callable[[Any], Any], Callable[[Any], Any] | None], ...] = tuple(
    (getattr(ApprovalRequest, column).__get__, _SPECIAL.get(column))
    for column in REQUEST_COLUMNS)
_STATUS = {s.value: s for s in RequestStatus}
_RISK = {r.value: r for r in Risk}
_MODE = {m.value: m for m in ReviewMode}
_DECODE: dict[str, Callable[[Any], Any]] = {
    "status": _STATUS.__getitem__, "risk": _RISK.__getitem__, "review_mode": _MODE.__getitem__,
    "mandatory": bool, "passkey": bool,
    **{name: (lambda text: () if text == "[]" else tuple(json.loads(text)))
       for name in ("evidence", "roles", "alternatives", "reasons", "changes")},
    "resource_versions": lambda text: {} if text == "{}" else json.loads(text),
    "review": lambda text: None if text is None else json.loads(text),
    "requires": lambda text: () if text == "[]" else tuple(
        (str(role), int(count)) for role, count in json.loads(text)),
}
_REQUEST_FIELDS = tuple(ApprovalRequest.__dataclass_fields__)


# The frozen dataclass's slots, written through their descriptors (what
# ``object.__setattr__`` ends up doing, without looking each one up by name).
_SLOT_SETTERS = {name: getattr(ApprovalRequest, name).__set__ for name in _REQUEST_FIELDS}
_ROW_SETTERS = tuple((_SLOT_SETTERS[name], _DECODE.get(name)) for name in REQUEST_COLUMNS)
_COPY_SLOTS = tuple((name, _SLOT_SETTERS[name], getattr(ApprovalRequest, name).__get__)
                    for name in _REQUEST_FIELDS)
assert set(REQUEST_COLUMNS) == set(_REQUEST_FIELDS)


def request_from_row(row: Sequence[Any]) -> ApprovalRequest:
    new = object.__new__(ApprovalRequest)
    for (set_slot, decode), value in zip(_ROW_SETTERS, row, strict=True):
        set_slot(new, value if decode is None else decode(value))
    return new


def replaced(request: ApprovalRequest, changes: Mapping[str, Any]) -> ApprovalRequest:
    """``dataclasses.replace`` without re-running ``__init__`` for forty fields."""
    new = object.__new__(ApprovalRequest)
    for name, set_slot, get_slot in _COPY_SLOTS:
        set_slot(new, changes[name] if name in changes else get_slot(request))
    return new


def decision_from_row(row: Sequence[Any]) -> DecisionRecord:
    data = dict(zip(DECISION_COLUMNS, row, strict=True))
    return DecisionRecord(**{**data, "kind": DecisionKind(data["kind"]),
                             "scope": ApproveScope(data["scope"]),
                             "alternatives": tuple(json.loads(data["alternatives"]))})


def audit_from_row(row: Sequence[Any]) -> AuditEvent:
    idx, at_us, kind, request_id, actor, data, prev_hash, hash_ = row
    return AuditEvent(index=int(idx), at_us=int(at_us), kind=kind, request_id=request_id,
                      actor=actor, data=data, prev_hash=prev_hash, hash=hash_)


def grant_from_row(row: Sequence[Any]) -> Grant:
    (id_, scope, tool, args, thread_id, session_id, expires_at, max_uses, uses,
     created_by, args_hash, definition_hash) = row
    return Grant(id=id_, scope=GrantScope(scope), tool=tool, args=json.loads(args),
                 thread_id=thread_id, session_id=session_id, expires_at=expires_at,
                 max_uses=max_uses, uses=int(uses), created_by=created_by,
                 args_hash=args_hash, definition_hash=definition_hash)


def identity_from_row(name: str, kind: str, roles: str, disabled: Any) -> Identity:
    return Identity(name=name, kind=IdentityKind(kind), roles=tuple(json.loads(roles)),
                    disabled=bool(disabled))
