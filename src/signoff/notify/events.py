"""Which audit events become notifications, and what a notification says.

The audit log is the source: a request's ``request.<status>`` events map to a
small public vocabulary (``request.created``, ``request.decided``,
``request.expired``, …). Everything else in the log (verdicts, users, sessions,
single decisions short of a quorum) is not notified. The payload follows the
Standard Webhooks shape ``{type, timestamp, data}``; ``data`` carries the
request as approvers see it — the exact frozen arguments and their hash — and
a link to its page in the inbox (a page that shows, never decides, on GET).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from signoff.audit import AuditEvent, AuditKind
from signoff.model import ApprovalRequest, DecisionRecord

# request.<status> audit kind → notification type (the notifications' own vocabulary)
TYPES: dict[str, str] = {
    AuditKind.REQUEST_CREATED: "request.created",
    AuditKind.REQUEST_APPROVED: "request.decided",
    AuditKind.REQUEST_REJECTED: "request.decided",
    AuditKind.REQUEST_RESPONDED: "request.decided",
    AuditKind.REQUEST_EXPIRED: "request.expired",
    AuditKind.REQUEST_CANCELLED: "request.cancelled",
    AuditKind.REQUEST_INVALIDATED: "request.invalidated",
    AuditKind.REQUEST_SUCCEEDED: "request.executed",
    AuditKind.REQUEST_FAILED: "request.failed",
    AuditKind.REQUEST_UNKNOWN: "request.unknown",
    AuditKind.NOTIFY_REMINDER: "request.reminder",  # written by signoff.notify.timers
    AuditKind.NOTIFY_ESCALATED: "request.escalated",
}
EDITED = "request.edited"  # an approver's edit: what would run changed, shown anew


def notification_type(event: AuditEvent) -> str | None:
    """The notification an audit event makes, ``None`` for one that makes none. A decision
    is notified only when it is an edit: every message already sent must show the
    arguments that would run now (``request.edited``)."""
    if event.request_id is None:
        return None
    if event.kind == AuditKind.DECISION_RECORDED:
        if '"edit"' not in event.data:  # most decisions: no parse
            return None
        data = json.loads(event.data)
        return EDITED if isinstance(data, dict) and data.get("kind") == "edit" else None
    return TYPES.get(event.kind)


def iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds") \
        .replace("+00:00", "Z")


def request_url(base_url: str, request_id: str) -> str:
    return f"{base_url.rstrip('/')}/requests/{quote(request_id, safe='')}"


def payload(event: AuditEvent, type_: str, request: ApprovalRequest,
            decisions: list[DecisionRecord], *, base_url: str) -> str:
    """The JSON text sent for ``event`` (the same bytes on every attempt and channel)."""
    data = json.loads(event.data)
    status = data.get("to", "pending") if isinstance(data, dict) else "pending"
    body: dict[str, Any] = {
        "event_id": f"evt_{event.index}", "event_index": event.index,
        "request_id": request.id, "status": status,
        "previous_status": data.get("from") if isinstance(data, dict) else None,
        "actor": event.actor,
        "tool": request.tool, "args": json.loads(request.args), "args_hash": request.args_hash,
        "risk": request.risk.value, "summary": request.summary,
        "description": request.description, "expected_effect": request.expected_effect,
        "thread_id": request.thread_id, "run_id": request.run_id,
        "principal": request.principal, "agent": request.agent,
        "roles": list(request.roles), "approvals_required": request.approvals_required,
        "mandatory": request.mandatory, "passkey": request.passkey,
        "created_at": iso(request.created_at),
        "expires_at": iso(request.expires_at), "policy_version": request.policy_version,
        "url": request_url(base_url, request.id),
    }
    if type_ == "request.escalated" and isinstance(data, dict):
        body["escalated_to"] = data.get("channels", [])
    if type_ in ("request.reminder", "request.escalated"):
        body["waiting_seconds"] = data.get("after") if isinstance(data, dict) else None
    if request.approved_args is not None and request.approved_hash != request.args_hash:
        # An approver's edit: these are the arguments that would run, and their hash.
        body["approved_args"] = json.loads(request.approved_args)
        body["approved_args_hash"] = request.approved_hash
    if type_ not in ("request.created", "request.reminder", "request.escalated", EDITED):
        body["outcome_code"] = data.get("outcome_code") if isinstance(data, dict) else None
        body["outcome_reason"] = data.get("outcome_reason") if isinstance(data, dict) else None
        body["decisions"] = [{"kind": d.kind.value, "approver": d.approver,
                              "at": iso(d.created_at), "reason": d.reason,
                              "args_hash": d.args_hash} for d in decisions]
    return json.dumps({"type": type_, "timestamp": iso(event.at_us / 1_000_000), "data": body},
                      ensure_ascii=False, separators=(",", ":"), sort_keys=True)
