"""The nouns of signoff: frozen, keyword-only records shared by every part.

Enums are ``StrEnum`` so they serialise as their plain values in JSON, TOML
and SQL without adapters. Ordering of ``Risk`` is meaningful (``max`` works).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from signoff import inputs
from signoff.decisions import (
    ApproveScope,
    Decision,
    DecisionKind,
    DecisionRecord,
    Grant,
    GrantScope,
    RecalledCall,
    Rejection,
    check_listed,
    listed_pairs,
)

__all__ = [
    "ApprovalRequest", "ApproveScope", "Decision", "DecisionKind", "DecisionRecord",
    "Effect", "Grant", "GrantScope", "InteractionMode", "Reason", "RecalledCall",
    "Rejection", "RequestStatus", "ReviewMode", "Risk", "RunContext", "Step", "ToolCall",
    "Verdict", "check_listed", "listed_pairs",
]


class Effect(enum.StrEnum):
    """What the policy says about one call."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"
    BLOCKED = "blocked"  # an ask that needs a human in a run where none may be asked


class Risk(enum.StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RISK_RANK[self]

    @classmethod
    def highest(cls, *risks: Risk) -> Risk:
        return max(risks, key=_RISK_RANK.__getitem__, default=cls.LOW)


_RISK_RANK = {Risk.LOW: 0, Risk.MEDIUM: 1, Risk.HIGH: 2, Risk.CRITICAL: 3}


class ReviewMode(enum.StrEnum):
    """Per thread: who answers a gated call. Unknown, missing or corrupt → ``MANUAL``."""

    MANUAL = "manual"  # a human reviews gated calls
    AUTO = "auto"  # a reviewer approves on the human's behalf; doubt goes to a human
    FULL = "full"  # gated calls approved without review, clarification tool withdrawn

    @property
    def rank(self) -> int:
        return _MODE_RANK[self]


_MODE_RANK = {ReviewMode.MANUAL: 0, ReviewMode.AUTO: 1, ReviewMode.FULL: 2}


class InteractionMode(enum.StrEnum):
    """Per run, set only by trusted callers: may a human be asked at all?"""

    INTERACTIVE = "interactive"
    SCHEDULED = "scheduled"
    WEBHOOK = "webhook"
    AUTONOMOUS = "autonomous"

    @property
    def unattended(self) -> bool:
        return self is not InteractionMode.INTERACTIVE


class Step(enum.StrEnum):
    """Where in the evaluation order (docs/concepts.md) a reason was produced."""

    WELL_FORMED = "well_formed"
    MANDATORY_DENY = "mandatory_deny"
    REJECTION_MEMORY = "rejection_memory"
    WORKSPACE = "workspace"
    MANDATORY_ASK = "mandatory_ask"
    ALLOW_RULE = "allow_rule"
    ASK_RULE = "ask_rule"
    GATED = "gated"
    UNKNOWN_TOOL = "unknown_tool"
    DEFAULT = "default"
    CLARIFICATION = "clarification"
    MODE = "mode"
    GRANT = "grant"
    REVIEWER = "reviewer"
    INTERACTION = "interaction"
    SHELL = "shell"
    CLASSIFIER = "classifier"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A call proposed by a model. ``args`` may be a mapping or the model's raw JSON text.

    ``description`` is whatever the model said about the call: kept and shown,
    always labelled as agent-supplied, never trusted.
    """

    id: str | None
    name: str
    args: Mapping[str, Any] | str | bytes | None = None
    description: str | None = None
    # Set by the adapter that showed the agent the tool, never by the model
    # (``signoff.policy.definitions``): the hash of its definition (an MCP tool's description,
    # input schema and annotations), and whether it changed since the session first saw it.
    definition_hash: str | None = None
    definition_changed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """Who, where and how a call is made. Build with ``signoff.policy.modes`` helpers.

    ``review_mode`` is the run's mode as fixed at run start (``None`` → the
    policy default); ``interaction_mode`` only ever comes from trusted callers.
    """

    thread_id: str | None = None
    run_id: str | None = None
    session_id: str | None = None
    review_mode: ReviewMode | None = None
    interaction_mode: InteractionMode = InteractionMode.INTERACTIVE
    principal: str | None = None
    intent: str | None = None
    parent_call: str | None = None
    # A mode a person set on the thread lends no more authority than that person holds
    # (``kernel.mode_authority``): who set the run's mode (``None``: the caller, trusted
    # code or the policy default — no bound), and their roles as stored when the call is
    # judged (``None`` with a setter: they cannot sign in now, and the mode lends nothing).
    mode_setter: str | None = None
    mode_roles: tuple[str, ...] | None = None
    # The interaction mode was claimed by public input (an agent over HTTP), not set by a
    # trusted caller: it restricts — asks are blocked, the clarification tool withdrawn —
    # and never loosens (``unattended_asks = "allow"`` does not apply to it).
    interaction_claimed: bool = False

    def __post_init__(self) -> None:
        # The input contract (``signoff.inputs``): ids are stored, indexed and shown.
        # An empty id means none, as everywhere else (``if context.thread_id``).
        for name in ("thread_id", "run_id", "session_id", "principal", "parent_call",
                     "mode_setter"):
            value = getattr(self, name)
            if value is not None and value != "":
                inputs.identifier(name, value)
        if self.intent is not None:
            inputs.text("intent", self.intent, inputs.INTENT_MAX)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reason:
    """One thing that contributed to a verdict: which step, which rule, what it said."""

    step: Step
    text: str
    rule: str | None = None
    effect: Effect | None = None
    code: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {
            "step": self.step.value,
            "rule": self.rule,
            "effect": self.effect.value if self.effect else None,
            "code": self.code,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The policy's answer for one call, with everything needed to explain and log it.

    ``code`` is the stable code of the deciding reason; ``message`` is written
    for the model (a denial reaches it as a tool error it can act on).
    ``source`` is ``policy``, ``grant:<id>``, ``mode:full`` or ``reviewer``.
    """

    effect: Effect
    code: str
    message: str
    reasons: tuple[Reason, ...]
    risk: Risk
    source: str
    policy_version: str
    decision_id: str
    call_id: str | None
    tool: str
    args_hash: str | None
    review_mode: ReviewMode
    interaction_mode: InteractionMode
    roles: tuple[str, ...] = ()
    approvals: int = 1
    expires_in: float | None = None
    mandatory: bool = False
    grant_id: str | None = None
    # The auto reviewer's answer (``ReviewOutcome.to_record()``) when one was asked or recalled.
    review: Mapping[str, Any] | None = None
    # Dual control (``signoff.kernel.quorum``): (role, approvals) pairs, all needed.
    requires: tuple[tuple[str, int], ...] = ()
    # Approvals need a passkey (``signature = "passkey"``, ``passkey_from_risk``).
    passkey: bool = False

    @property
    def allowed(self) -> bool:
        return self.effect is Effect.ALLOW

    def to_dict(self) -> dict[str, Any]:
        return {
            "effect": self.effect.value,
            "code": self.code,
            "message": self.message,
            "reasons": [r.to_dict() for r in self.reasons],
            "risk": self.risk.value,
            "source": self.source,
            "policy_version": self.policy_version,
            "decision_id": self.decision_id,
            "call_id": self.call_id,
            "tool": self.tool,
            "args_hash": self.args_hash,
            "review_mode": self.review_mode.value,
            "interaction_mode": self.interaction_mode.value,
            "roles": list(self.roles),
            "approvals": self.approvals,
            "expires_in": self.expires_in,
            "mandatory": self.mandatory,
            "passkey": self.passkey,
            "grant_id": self.grant_id,
        }


class RequestStatus(enum.StrEnum):
    """The approval request lifecycle (docs/kernel.md); legal moves live in ``lifecycle.py``."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    RESPONDED = "responded"
    EXECUTING = "executing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNKNOWN = "unknown"  # a run died mid-call: needs reconciliation, never a silent re-run
    INVALIDATED = "invalidated"  # re-validation before running failed


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """One call awaiting humans, frozen: ``args`` is canonical JSON text, ``args_hash`` its hash.

    ``approved_args``/``approved_hash`` are set when an approver edited the
    call; what runs is always ``run_args``, re-hashed before it runs.
    """

    id: str
    call_id: str
    tool: str
    args: str
    args_hash: str
    status: RequestStatus
    risk: Risk
    summary: str
    policy_version: str
    created_at: float
    updated_at: float
    thread_id: str | None = None
    run_id: str | None = None
    session_id: str | None = None
    parent_call: str | None = None
    principal: str | None = None
    agent: str | None = None
    description: str | None = None  # agent-supplied, shown as such, never trusted
    expected_effect: str | None = None
    evidence: tuple[str, ...] = ()
    resource_versions: Mapping[str, str] = field(default_factory=dict)
    roles: tuple[str, ...] = ()
    approvals_required: int = 1
    expires_at: float | None = None
    mandatory: bool = False
    decision_id: str | None = None
    reasons: tuple[Mapping[str, Any], ...] = ()
    review_mode: ReviewMode = ReviewMode.MANUAL
    approved_args: str | None = None
    approved_hash: str | None = None
    outcome_code: str | None = None
    outcome_reason: str | None = None
    alternatives: tuple[str, ...] = ()
    response: str | None = None
    result: str | None = None  # JSON text of what the tool returned
    error: str | None = None
    fencing_token: int | None = None
    lease_until: float | None = None
    executor: str | None = None
    version: int = 0
    # The auto reviewer's answer that sent this call to a human (``ReviewOutcome.to_record()``).
    review: Mapping[str, Any] | None = None
    # For a child's request (``parent_call``): the worker waiting on it, ``host:pid:boot``; a
    # restarted or dead worker's live waits are withdrawn by ``Gate.recover``.
    waiter: str | None = None
    # Dual control (``signoff.kernel.quorum``): (role, approvals) pairs, every one needed, each
    # approver counted once; ``roles`` then lists them all and ``approvals_required`` the sum.
    requires: tuple[tuple[str, int], ...] = ()
    # Write evidence (``signoff.kernel.write_evidence``): per file the call writes, what changes —
    # a unified diff, or a description (binary, too large, a shell write, outside, …).
    changes: tuple[Mapping[str, Any], ...] = ()
    # The hash of the tool's definition the agent was shown (an MCP tool's description,
    # input schema and annotations), when the caller knows it; see ``Grant.definition_hash``.
    definition_hash: str | None = None
    # Every approval needs the approver's passkey (``signoff.kernel.assertions``).
    passkey: bool = False

    @property
    def run_args(self) -> str:
        return self.approved_args if self.approved_args is not None else self.args

    @property
    def run_hash(self) -> str:
        return self.approved_hash if self.approved_hash is not None else self.args_hash

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: arguments and result as JSON values (what every surface shows), plus
        ``args_canonical``/``approved_args_canonical``, the exact bytes that were hashed."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, tuple):
                value = [dict(v) if isinstance(v, Mapping) else v for v in value]
            elif isinstance(value, Mapping):
                value = dict(value)
            elif name in _JSON_TEXT and value is not None:
                if name != "result":
                    out[f"{name}_canonical"] = value
                value = _json_value(value)
            out[name] = value
        return out


_JSON_TEXT = frozenset({"args", "approved_args", "result"})


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:  # stored before it was JSON (never, but show it rather than fail)
        return text
