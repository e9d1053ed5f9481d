"""Bulk approval: pending calls of one shape approved with one confirmation, each decided
on its own.

An approver ticks pending calls of the same *shape* in the inbox; the confirmation lists
each with its arguments and sends back every request id with the arguments hash it
showed. Each becomes its own *approve once* through ``Decider.decide`` — its own
transaction, decision row and ``decision.recorded`` event (``via: "bulk"``), bound to
that hash — under every rule of a one-by-one decision: roles, quorum (one vote on each),
no self-approval, expiry. Refused and reported, never approved: a mandatory ask (the
policy wants a human to look at that call by itself), one that needs a passkey (a
passkey signs one request and its arguments), one whose arguments changed since they
were shown. Nothing that was not listed is touched: a call added after the page was
drawn waits for its own decision.

The *shape* of a call is its tool, the names of its arguments, and for the tool's shell
argument the command models its command line runs, in order (``git status · make``):
``pytest -x a`` and ``pytest b`` share a shape, ``git status`` and ``git push`` do not.
It groups what an approver can judge at a glance; it never widens what is approved,
which is always the listed arguments, hash by hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from signoff import inputs
from signoff.errors import Forbidden, InvalidDecision, InvalidInput, SignoffError
from signoff.identity import Identity
from signoff.kernel.deciding import Decider, DecisionResult
from signoff.kernel.ownership import refusal
from signoff.model import ApprovalRequest, Decision, RequestStatus
from signoff.policy import PolicyConfig
from signoff.shown import shown_hash
from signoff.store.base import Store

BULK_MAX = 100  # calls one confirmation may approve (the inbox shows 50 pending)
VIA = "bulk"


@dataclass(frozen=True, slots=True)
class Shape:
    """What calls approved together have in common (see the module docstring)."""

    tool: str
    keys: tuple[str, ...]
    commands: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """A short stable name for the shape (the inbox's checkboxes carry it)."""
        text = json.dumps([self.tool, self.keys, self.commands], ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def describe(self) -> str:
        """``execute(command): git status · make``."""
        head = f"{self.tool}({', '.join(self.keys)})"
        return f"{head}: {' · '.join(self.commands)}" if self.commands else head

    def to_dict(self) -> dict[str, Any]:
        """Its parts, as the API sends them (``shape_parts``: a ``Client`` reads them back)."""
        return {"tool": self.tool, "keys": list(self.keys), "commands": list(self.commands)}


@dataclass(frozen=True, slots=True)
class Refused:
    """A listed call that was not approved, and why (``code`` is stable)."""

    request_id: str
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"request_id": self.request_id, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class BulkResult:
    """Each listed call's fate: a vote recorded (``decided``), or ``refused``."""

    shape: Shape | None
    decided: tuple[DecisionResult, ...]
    refused: tuple[Refused, ...]

    @property
    def approved(self) -> list[str]:
        """The calls now approved (a quorum of more than one may still wait for others)."""
        return [r.request.id for r in self.decided
                if r.request.status is RequestStatus.APPROVED]

    @property
    def recorded(self) -> list[str]:
        """The calls that got this vote and still wait for more approvals."""
        return [r.request.id for r in self.decided
                if r.request.status is RequestStatus.PENDING]

    def to_dict(self) -> dict[str, Any]:
        return {"shape": self.shape.describe() if self.shape else None,
                "shape_parts": self.shape.to_dict() if self.shape else None,
                "approved": self.approved, "recorded": self.recorded,
                "decisions": [r.to_dict() for r in self.decided],
                "refused": [r.to_dict() for r in self.refused]}


def shape_of(request: ApprovalRequest, config: PolicyConfig) -> Shape:
    """The shape of the arguments that would run (an edit's, if edited)."""
    args = json.loads(request.run_args)
    keys = tuple(sorted(args)) if isinstance(args, dict) else ()
    spec = config.tools.get(request.tool)
    shell = spec.shell if spec is not None else None
    command = args.get(shell) if shell and isinstance(args, dict) else None
    return Shape(request.tool, keys, _models(command) if isinstance(command, str) else ())


def _models(command: str) -> tuple[str, ...]:
    from signoff.shell import analyze  # noqa: PLC0415 (shell tools only)

    found = []
    for simple in analyze(command).commands:
        if simple.deny_only:
            continue  # a wrapper's guessed inner command, not one that runs as written
        if simple.invocation is not None:
            found.append(simple.invocation.model)
        else:
            found.append(simple.basename if simple.name_plain else "?")
    return tuple(found)


def excluded(request: ApprovalRequest, identity: Identity, now: float) -> Refused | None:
    """Why ``identity`` may not approve ``request`` in bulk, or ``None`` (it may, as far as
    the row says: the decision checks everything again under its lock). The inbox asks it
    to decide whether a row gets a checkbox."""
    why: SignoffError | None = refusal(request, identity)
    if why is not None:
        return Refused(request.id, why.code, why.message)
    if request.status is not RequestStatus.PENDING:
        return Refused(request.id, "already_decided",
                       f"request {request.id} is already {request.status.value}")
    if request.expires_at is not None and now >= request.expires_at:
        return Refused(request.id, "expired", f"request {request.id} has expired")
    if request.mandatory:
        return Refused(request.id, "mandatory", "a mandatory ask is decided by itself, "
                       "on its own page, never in bulk")
    if request.passkey:
        return Refused(request.id, "passkey_required", "approving this call needs a "
                       "passkey, which signs one request: approve it on its own page")
    return None


class BulkDecider:
    """Many approvals, one confirmation: each through ``Decider.decide``."""

    def __init__(self, store: Store, decider: Decider, config: PolicyConfig) -> None:
        self.store = store
        self.decider = decider
        self.config = config

    def approve_many(self, listed: Sequence[tuple[str, str]], *,
                     identity: Identity) -> BulkResult:
        """Approve once each listed ``(request id, arguments hash shown)``. Raises for the
        whole list, writing nothing: ``InvalidInput`` (``nothing_listed``,
        ``too_many_listed``, ``duplicate_listed``, a malformed id or hash), ``Forbidden``
        (an agent or a disabled identity), ``InvalidDecision`` ``mixed_shapes``. Per call,
        the refusals are in the result."""
        pairs = self._checked(listed, identity)
        now = self.decider.clock()
        refused: list[Refused] = []
        chosen: list[tuple[ApprovalRequest, str]] = []
        for request_id, shown in pairs:
            request = self.store.get_request(request_id)
            if request is None:
                refused.append(Refused(request_id, "not_found",
                                       f"no approval request {request_id!r}"))
                continue
            if request.run_hash != shown:
                refused.append(Refused(request_id, "args_changed", (
                    f"the arguments of {request_id} changed since they were shown "
                    f"({shown} → {request.run_hash})")))
                continue
            why = excluded(request, identity, now)
            if why is not None:
                refused.append(why)
                continue
            chosen.append((request, shown))
        shapes = {shape_of(request, self.config) for request, _ in chosen}
        if len(shapes) > 1:
            raise InvalidDecision("calls approved together must share one shape (tool, "
                                  "argument names, commands); listed: " + "; ".join(
                                      sorted(s.describe() for s in shapes)),
                                  code="mixed_shapes")
        decided: list[DecisionResult] = []
        for request, shown in chosen:
            try:
                decided.append(self.decider.decide(
                    request.id, Decision.approve(scope="once", expected_args_hash=shown),
                    identity=identity, via=VIA))
            except SignoffError as exc:  # decided meanwhile, expired, a role removed …
                refused.append(Refused(request.id, exc.code, exc.message))
        order = {request_id: i for i, (request_id, _) in enumerate(pairs)}
        refused.sort(key=lambda r: order[r.request_id])
        return BulkResult(next(iter(shapes), None), tuple(decided), tuple(refused))

    def _checked(self, listed: Sequence[tuple[str, str]],
                 identity: Identity) -> list[tuple[str, str]]:
        if not identity.may_decide:
            raise Forbidden(f"{identity.name} is an agent identity and cannot decide"
                            if not identity.disabled else f"{identity.name} is disabled",
                            code="agent_cannot_decide" if not identity.disabled
                            else "identity_disabled")
        if not listed:
            raise InvalidInput("list at least one call to approve", code="nothing_listed",
                               field="listed")
        if len(listed) > BULK_MAX:
            raise InvalidInput(f"at most {BULK_MAX} calls are approved together",
                               code="too_many_listed", field="listed")
        pairs = [(inputs.identifier("request id", request_id),
                  shown_hash("args_hash", shown)) for request_id, shown in listed]
        if len({request_id for request_id, _ in pairs}) != len(pairs):
            raise InvalidInput("a call is listed twice", code="duplicate_listed",
                               field="listed")
        return pairs
