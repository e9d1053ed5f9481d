"""What people decide, and what the gate remembers of it: decisions as given and as
stored, standing grants, remembered rejections, and the calls an auto-approve card
lists. Part of the shared vocabulary (``signoff.model`` re-exports every name)."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from signoff import inputs
from signoff.errors import InvalidDecision, InvalidInput


class GrantScope(enum.StrEnum):
    ONCE = "once"
    THREAD = "thread"
    SESSION = "session"


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """A standing approval: this tool, arguments matching these globs, in this scope.

    ``args`` maps argument names to patterns (globs, or ``re:`` regexes), the
    same language as policy rules. ``expires_at`` is a POSIX timestamp judged
    against the evaluating clock; ``max_uses`` ``None`` means unlimited.
    """

    id: str
    scope: GrantScope
    tool: str
    args: Mapping[str, str] = field(default_factory=dict)
    thread_id: str | None = None
    session_id: str | None = None
    expires_at: float | None = None
    max_uses: int | None = None
    uses: int = 0
    created_by: str | None = None
    # Set by "approve for this thread": the grant covers these exact canonical arguments
    # only (an argument added or changed is asked again), whatever ``args`` says.
    args_hash: str | None = None
    # An MCP tool's definition hash when granted: a changed definition is asked anew.
    definition_hash: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecalledCall:
    """What a call id already received in its thread: a request (``requested``) and/or an
    auto review (``review``, a ``ReviewOutcome`` record), for the arguments of ``args_hash``."""

    args_hash: str
    requested: bool = False
    review: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejection:
    """A human's earlier 'no' to the same (thread, tool, args hash).

    Remembered so that a model cannot wear a human down by asking again.
    """

    thread_id: str
    tool: str
    args_hash: str
    reason: str
    alternatives: tuple[str, ...] = ()
    request_id: str | None = None


class DecisionKind(enum.StrEnum):
    APPROVE = "approve"
    REJECT = "reject"
    EDIT = "edit"  # approve with new arguments, re-checked and re-hashed
    RESPOND = "respond"  # answer the model without running the tool


class ApproveScope(enum.StrEnum):
    ONCE = "once"  # Approve once
    THREAD = "thread"  # Approve for this thread: also a thread grant for this tool and pattern
    # Auto-approve this thread: the thread switches to ``auto`` and the pause's other
    # undecided calls are approved too, in the same transaction (``kernel.deciding``)
    AUTO_THREAD = "auto_thread"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What an approver says. The approver is never a field: it comes from authentication.

    Build with ``Decision.approve()``, ``Decision.reject(reason, alternatives)``,
    ``Decision.edit(args)`` or ``Decision.respond(message)``.
    """

    kind: DecisionKind
    reason: str | None = None
    alternatives: tuple[str, ...] = ()
    args: Mapping[str, Any] | str | None = None
    message: str | None = None
    scope: ApproveScope = ApproveScope.ONCE
    grant_args: Mapping[str, str] | None = None  # patterns for a thread grant; default: exact
    # The arguments hash the approver was shown. When given, the decision applies only if
    # it is still the hash that would run (``ArgsChanged``, code ``args_changed``, if not).
    expected_args_hash: str | None = None
    # Auto-approve this thread: the other calls the approver was shown, as (request id,
    # arguments hash) pairs; only those, still pending with that hash, are approved with it
    # (``kernel.auto_thread``). None or empty: the request alone.
    listed: tuple[tuple[str, str], ...] = ()
    # A WebAuthn assertion (the browser's ``PublicKeyCredential`` JSON) over this decision's
    # challenge (``signoff.kernel.assertions``): needed to approve a passkey request.
    assertion: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        # The input contract (``signoff.inputs``): what an approver writes is stored and shown.
        if self.listed:
            check_listed(self.listed, self.scope)
        inputs.optional_text("reason", self.reason, inputs.REASON_MAX)
        inputs.optional_text("message", self.message, inputs.MESSAGE_MAX)
        inputs.optional_text("expected_args_hash", self.expected_args_hash, inputs.PATTERN_MAX)
        inputs.texts("alternatives", self.alternatives, inputs.ALTERNATIVE_MAX,
                     inputs.ALTERNATIVES_MAX)
        for key, pattern in (self.grant_args or {}).items():
            inputs.text("grant_args", key, inputs.PATTERN_MAX)
            inputs.text(f"grant_args.{key}", pattern, inputs.PATTERN_MAX)

    @classmethod
    def approve(cls, *, scope: ApproveScope | str = ApproveScope.ONCE,
                grant_args: Mapping[str, str] | None = None,
                expected_args_hash: str | None = None,
                listed: Iterable[tuple[str, str]] | None = None,
                assertion: Mapping[str, Any] | None = None) -> Decision:
        try:
            parsed = ApproveScope(scope)
        except ValueError:
            raise InvalidDecision(f"unknown approval scope {scope!r}: expected one of "
                                  f"{', '.join(s.value for s in ApproveScope)}",
                                  code="unknown_scope") from None
        return cls(kind=DecisionKind.APPROVE, scope=parsed, grant_args=grant_args,
                   expected_args_hash=expected_args_hash,
                   listed=listed_pairs(listed), assertion=assertion)

    @classmethod
    def reject(cls, reason: str, alternatives: tuple[str, ...] | list[str] = (), *,
               expected_args_hash: str | None = None) -> Decision:
        return cls(kind=DecisionKind.REJECT, reason=reason, alternatives=tuple(alternatives),
                   expected_args_hash=expected_args_hash)

    @classmethod
    def edit(cls, args: Mapping[str, Any] | str, *, reason: str | None = None,
             expected_args_hash: str | None = None,
             assertion: Mapping[str, Any] | None = None) -> Decision:
        return cls(kind=DecisionKind.EDIT, args=args, reason=reason,
                   expected_args_hash=expected_args_hash, assertion=assertion)

    @classmethod
    def respond(cls, message: str, *, expected_args_hash: str | None = None) -> Decision:
        return cls(kind=DecisionKind.RESPOND, message=message,
                   expected_args_hash=expected_args_hash)


LISTED_MAX = 200  # the calls one auto-approve card may list
_HASH = re.compile(r"sha256:[0-9a-f]{64}")


def listed_pairs(listed: Iterable[tuple[str, str]] | None) -> tuple[tuple[str, str], ...]:
    """The (request id, arguments hash) pairs of a card, as a tuple; ``invalid_listed`` for
    anything else (checked fully by ``check_listed``)."""
    if listed is None:
        return ()
    if isinstance(listed, (str, bytes, Mapping)):
        raise InvalidInput("listed: expected (request id, arguments hash) pairs",
                           code="invalid_listed", field="listed")
    pairs: list[tuple[str, str]] = []
    for item in listed:
        if isinstance(item, (str, bytes, Mapping)) or not isinstance(item, Iterable):
            raise InvalidInput("listed: expected (request id, arguments hash) pairs",
                               code="invalid_listed", field="listed")
        pair = tuple(item)
        if len(pair) != 2:
            raise InvalidInput("listed: expected (request id, arguments hash) pairs",
                               code="invalid_listed", field="listed")
        pairs.append((pair[0], pair[1]))
        if len(pairs) > LISTED_MAX:
            break
    return tuple(pairs)


def check_listed(listed: tuple[tuple[str, str], ...], scope: ApproveScope) -> None:
    """A card lists calls only for *Auto-approve this thread* (``listed_needs_auto_thread``),
    at most ``LISTED_MAX`` (``too_many_listed``), each a request id and a ``sha256:`` hash
    (``invalid_listed``)."""
    if scope is not ApproveScope.AUTO_THREAD:
        raise InvalidDecision("only an auto-approve decision lists other calls",
                              code="listed_needs_auto_thread")
    if len(listed) > LISTED_MAX:
        raise InvalidInput(f"listed: at most {LISTED_MAX} calls", code="too_many_listed",
                           field="listed")
    for pair in listed:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InvalidInput("listed: expected (request id, arguments hash) pairs",
                               code="invalid_listed", field="listed")
        request_id, hashed = pair
        inputs.identifier("listed request id", request_id)
        if not isinstance(hashed, str) or not _HASH.fullmatch(hashed):
            raise InvalidInput("listed: an arguments hash is sha256:<64 hex digits>",
                               code="invalid_listed", field="listed")


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionRecord:
    """A decision as stored: who (authenticated), on which request, approving which hash."""

    id: str
    request_id: str
    kind: DecisionKind
    approver: str
    created_at: float
    args_hash: str | None = None  # the hash an approve or edit approves
    reason: str | None = None
    alternatives: tuple[str, ...] = ()
    args: str | None = None
    message: str | None = None
    scope: ApproveScope = ApproveScope.ONCE
    # A passkey approval: JSON text of the assertion and what its challenge was made of.
    assertion: str | None = None
