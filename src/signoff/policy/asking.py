"""Asking by review mode, the interaction mode, and building the verdict.

The second half of an evaluation: once the evaluation order (``evaluation.py``)
has decided that a call needs a yes, this decides who gives it — a standing
grant, full mode, the auto reviewer, or a human — and turns an ask that needs
a human in an unattended run into ``blocked``. It also owns the evaluation's
state (reasons, risk, the lazily computed args hash) and the ``Verdict`` itself.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from signoff.canonical import args_hash
from signoff.model import Effect, Reason, ReviewMode, Risk, RunContext, Step, ToolCall, Verdict
from signoff.policy.matching import ToolView, grant_applies
from signoff.policy.memory import RecalledCall
from signoff.policy.modes import clamp
from signoff.policy.reviewing import ReviewOutcome, ReviewRequest, beyond_reviewer
from signoff.policy.spec import CONCERN_CODES, Rule

if TYPE_CHECKING:
    from signoff.policy.engine import Policy
    from signoff.shell import ShellAnalysis


def mandatory_codes() -> frozenset[str]:
    """The shell concerns always asked (``signoff.shell.concerns.MANDATORY``), imported
    when a concern is first weighed: a call that raises none never loads the analyser."""
    from signoff.shell.concerns import MANDATORY  # noqa: PLC0415

    return MANDATORY


class _DecisionIds:
    """Unique, cheap decision ids: a random per-process prefix and a counter.

    Ids name log entries; they need to be unique, not secret. The prefix is
    drawn again in a forked child so two processes never share a sequence.
    """

    def __init__(self) -> None:
        self.reseed()
        os.register_at_fork(after_in_child=self.reseed)

    def reseed(self) -> None:
        self.prefix = "dec_" + os.urandom(8).hex()
        self.counter = itertools.count()

    def __call__(self) -> str:
        return f"{self.prefix}{next(self.counter):08x}"


_decision_id = _DecisionIds()


def merged(requirements: Sequence[tuple[tuple[str, int], ...]]) -> tuple[tuple[str, int], ...]:
    """Several rules' dual-control requirements at once: per role the largest count asked
    (the quorum itself is ``signoff.kernel.quorum``)."""
    counts: dict[str, int] = {}
    for requires in requirements:
        for role, count in requires:
            counts[role] = max(counts.get(role, 0), count)
    return tuple(counts.items())


def ceiling_reason(requested: ReviewMode, mode: ReviewMode) -> Reason:
    return Reason(step=Step.MODE, code="ceiling",
                  text=f"review mode {requested.value} clamped to the operator ceiling "
                       f"{mode.value}")


class Asking:
    """The state of one evaluation and everything that turns it into a verdict."""

    def __init__(self, policy: Policy, call: ToolCall, context: RunContext) -> None:
        self.policy = policy
        self.config = policy.config
        self.call = call
        self.context = context
        requested = context.review_mode or self.config.default_review_mode
        self.mode = clamp(requested, self.config.ceiling)
        self.reasons: list[Reason] = []
        if self.mode is not requested:
            self.reasons.append(ceiling_reason(requested, self.mode))
        self.risk = Risk.LOW
        self.args: dict[str, Any] = {}
        self.hash: str | None = None
        self.view: ToolView | None = None
        self.analysis: ShellAnalysis | None = None
        self.review_record: Mapping[str, Any] | None = None

    def by_mode(self, code: str, rules: tuple[Rule, ...], what: str) -> Verdict:
        """A non-mandatory ask: a grant, full mode or the auto reviewer may answer it —
        unless the call was asked before (a resume): then what it received answers it. With
        no shortcut to take (manual mode, no grant) a human is asked either way, and the
        call's past is not read (a round trip less for every ask)."""
        if self.needs_passkey(rules):  # only a human with a passkey answers it
            return self.human(mandatory=False, rules=rules, what=what, code=code)
        grant = self.matching_grant()
        recalled = self.recall() if grant is not None or self.mode is not ReviewMode.MANUAL \
            else None
        if recalled is not None and recalled.requested:
            # Its request (and the humans' decision on it) answers it; no shortcut may.
            self.review_record = recalled.review
            self.reasons.append(Reason(step=Step.MODE, code="requested_before",
                                       text="this call already has an approval request"))
            return self.human(mandatory=False, rules=rules, what=what, code=code)
        if grant is not None:
            self.reasons.append(Reason(step=Step.GRANT, code="grant", rule=f"grant:{grant}",
                                       text=f"standing approval {grant} covers this call"))
            return self.verdict(Effect.ALLOW, "grant", "Allowed by a standing approval.",
                                source=f"grant:{grant}", grant_id=grant)
        beyond = self.beyond_setter(rules) if self.mode is not ReviewMode.MANUAL else None
        if beyond is not None:  # the mode's setter could not have approved it either
            self.reasons.append(beyond)
            return self.human(mandatory=False, rules=rules, what=what, code=code)
        if self.mode is ReviewMode.FULL:
            self.reasons.append(Reason(step=Step.MODE, code="mode_full",
                                       text="full review mode approves without review"))
            return self.verdict(Effect.ALLOW, "mode_full", "Allowed (full review mode).",
                                source="mode:full")
        if self.mode is ReviewMode.AUTO:
            # A call is reviewed once: a resume recalls the answer it got.
            outcome = self.recalled_review(recalled) or self.review()
            if outcome is None:
                outcome = ReviewOutcome(approve=False, reason="reviewer gave no valid verdict",
                                        reviewer=type(self.policy.reviewer).__name__,
                                        error="review_error")
            self.review_record = outcome.to_record()
            if outcome.approve:
                self.reasons.append(Reason(step=Step.REVIEWER, code="reviewer_approved",
                                           text=outcome.reason))
                return self.verdict(Effect.ALLOW, "reviewer_approved",
                                    "Allowed by the auto reviewer.", source="reviewer")
            self.reasons.append(Reason(step=Step.REVIEWER, code="reviewer_escalated",
                                       text=outcome.reason))
        return self.human(mandatory=False, rules=rules, what=what, code=code)

    def recall(self) -> RecalledCall | None:
        """What this call id already received in its thread, for these same arguments."""
        call_id = self.call.id
        if not self.context.thread_id or not isinstance(call_id, str) or not call_id:
            return None
        recalled = self.policy.memory.recall_call(self.context.thread_id, call_id)
        if recalled is None or recalled.args_hash != self.args_hash():
            return None  # another call under a reused id: the request insert refuses it
        return recalled

    def human(self, *, mandatory: bool, rules: Sequence[Rule], what: str,
              code: str = "mandatory_ask") -> Verdict:
        cfg = self.config
        interaction = self.context.interaction_mode
        if interaction.unattended:
            if not mandatory and cfg.unattended_asks == "allow" and not self.context.parent_call \
                    and not self.context.interaction_claimed and not self.needs_passkey(rules):
                self.reasons.append(Reason(
                    step=Step.INTERACTION, code="unattended_allowed",
                    text=f"unattended_asks = allow lets this {interaction.value} root run pass"))
                return self.verdict(Effect.ALLOW, "unattended_allowed",
                                    "Allowed (unattended run, non-mandatory ask).",
                                    source="unattended")
            self.reasons.append(Reason(
                step=Step.INTERACTION, code="needs_human",
                text=f"a {interaction.value} run cannot wait for a human"))
            return self.verdict(
                Effect.BLOCKED, "needs_human",
                f"BLOCKED: this call needs a human decision ({what}), and this "
                f"{interaction.value} run cannot ask one. Missing decision: approval of "
                f"{self.call.name} with these arguments. Continue without it or report it.",
                mandatory=mandatory, rules=rules)
        return self.verdict(
            Effect.ASK, code,
            f"Waiting for human approval: {what}.", mandatory=mandatory, rules=rules)

    def recalled_review(self, recalled: RecalledCall | None) -> ReviewOutcome | None:
        """The answer this call already got — unless the bound, as the policy now stands,
        puts the call beyond any reviewer (a tightened policy is not outrun by a kept yes)."""
        if recalled is None or recalled.review is None:
            return None
        outcome = ReviewOutcome.from_record(recalled.review)
        if outcome.approve:
            bounded = beyond_reviewer(self.review_request(), self.config.review.max_risk)
            if bounded is not None:
                return bounded
        return outcome

    def review_request(self) -> ReviewRequest:
        return ReviewRequest(call=self.call, args=self.args, context=self.context,
                             risk=self.risk, reasons=tuple(self.reasons),
                             concerns=tuple(r for r in self.reasons if r.code in CONCERN_CODES))

    def review(self) -> ReviewOutcome | None:
        request = self.review_request()
        # The bound: beyond [review] max_risk, or with a concern, the reviewer is not asked.
        bounded = beyond_reviewer(request, self.config.review.max_risk)
        if bounded is not None:
            return bounded
        try:
            outcome = self.policy.reviewer.review(request)
        except Exception:  # a reviewer that fails is doubt, and doubt goes to a human
            return None
        if not isinstance(outcome, ReviewOutcome) or not isinstance(outcome.approve, bool):
            return None
        return outcome

    def matching_grant(self) -> str | None:
        context = self.context
        if context.thread_id is None and context.session_id is None:
            return None
        grants = self.policy.memory.grants_for(
            thread_id=context.thread_id, session_id=context.session_id, tool=self.call.name)
        now = self.policy.clock()
        shell_arg = self.view.spec.shell if self.view and self.view.spec else None
        for grant in grants:
            if grant_applies(grant, self.call.name, self.args, now, shell_arg=shell_arg,
                             definition_hash=self.call.definition_hash,
                             analysis=self.analysis,
                             call_hash=self.args_hash() if grant.args_hash else None):
                return grant.id
        return None

    def concern(self, code: str, text: str, risk: Risk = Risk.HIGH) -> Reason:
        """Record a concern (``signoff.shell.concerns``): a reason, and at least its risk."""
        reason = Reason(step=Step.SHELL, code=code, text=text,
                        effect=Effect.ASK if code in self.config.always_ask
                        or code in mandatory_codes() else None)
        self.reasons.append(reason)
        self.raise_risk(risk)
        return reason

    def raise_risk(self, risk: Risk) -> None:
        if risk.rank > self.risk.rank:
            self.risk = risk

    def rule_reason(self, step: Step, rule: Rule, code: str) -> Reason:
        key = (id(rule), step, code)
        reason = self.policy._reasons.get(key)
        if reason is None:
            reason = Reason(step=step, rule=rule.id, effect=rule.effect, code=code,
                            text=rule.describe())
            self.policy._reasons[key] = reason
        self.reasons.append(reason)
        if rule.risk is not None:
            self.raise_risk(rule.risk)
        return reason

    def deny(self, step: Step, code: str, message: str) -> Verdict:
        self.reasons.append(Reason(step=step, code=code, effect=Effect.DENY, text=message))
        return self.verdict(Effect.DENY, code, message)

    def args_hash(self) -> str:
        if self.hash is None:
            self.hash = args_hash(self.args)
        return self.hash

    def requirements(self, rules: Sequence[Rule]
                     ) -> tuple[tuple[str, ...], int, float | None, tuple[tuple[str, int], ...]]:
        """What a human answer to these rules needs: roles (any of), approvals, expiry,
        dual control."""
        cfg = self.config
        roles: tuple[str, ...] = cfg.default_roles
        approvals = cfg.default_approvals
        expires = cfg.default_expires
        requires: tuple[tuple[str, int], ...] = ()
        if rules:
            roles = tuple(dict.fromkeys(r for rule in rules for r in rule.roles)) or roles
            approvals = max((r.approvals for r in rules if r.approvals), default=approvals)
            limits = [r.expires for r in rules if r.expires is not None]
            expires = min(limits) if limits else expires
            requires = merged([rule.requires for rule in rules if rule.requires])
            if requires:  # dual control: all of these roles, each approver counted once
                named = tuple(dict.fromkeys(r for rule in rules for r in rule.roles))
                roles = tuple(dict.fromkeys([*(role for role, _ in requires), *named]))
                approvals = max(approvals if named else 1, sum(n for _, n in requires))
        return roles, approvals, expires, requires

    def needs_passkey(self, rules: Sequence[Rule]) -> bool:
        """Whether a human answer needs a passkey: a rule says ``signature = "passkey"``, or
        the call's risk reaches ``[policy] passkey_from_risk``. Nothing else may answer it."""
        floor = self.config.passkey_from_risk
        return any(rule.passkey for rule in rules) or (
            floor is not None and self.risk.rank >= floor.rank)

    def beyond_setter(self, rules: Sequence[Rule]) -> Reason | None:
        """Why the run's mode may not answer this call in place of a human: it was set by a
        person (``context.mode_setter``) who cannot sign in now, or the call needs dual
        control, a quorum above one, or a role that person lacks
        (``kernel.mode_authority``). ``None``: no person set it, or it may."""
        setter = self.context.mode_setter
        if setter is None:
            return None
        held = self.context.mode_roles
        roles, approvals, _, requires = self.requirements(rules)
        mode = self.mode.value
        if held is None:
            code = "mode_setter_inactive"
            text = f"review mode {mode} was set by {setter}, who cannot sign in now: it " \
                   "lends no authority"
        elif requires:
            code = "mode_needs_dual_control"
            text = f"this call needs dual control; review mode {mode}, set by {setter}, " \
                   "does not stand in for it"
        elif approvals > 1:
            code = "mode_needs_quorum"
            text = f"this call needs {approvals} approvals; review mode {mode}, set by " \
                   f"{setter}, stands in for one at most"
        elif roles and not set(roles) & set(held):
            code = "mode_setter_lacks_role"
            text = f"this call needs one of the roles {', '.join(roles)}; {setter}, who set " \
                   f"review mode {mode}, holds none of them"
        else:
            return None
        return Reason(step=Step.MODE, code=code, text=text)

    def verdict(self, effect: Effect, code: str, message: str, *, source: str = "policy",
                mandatory: bool = False, rules: Sequence[Rule] = (),
                grant_id: str | None = None) -> Verdict:
        cfg = self.config
        roles, approvals, expires, requires = self.requirements(rules)
        asks = effect in (Effect.ASK, Effect.BLOCKED)
        passkey = asks and self.needs_passkey(rules)
        if passkey:
            self.reasons.append(Reason(step=Step.MODE, code="passkey_required",
                                       text="approving this call needs a passkey"))
        return Verdict(
            effect=effect, code=code, message=message, reasons=tuple(self.reasons),
            risk=self.risk, source=source, policy_version=cfg.version,
            decision_id=_decision_id(),
            call_id=self.call.id if isinstance(self.call.id, str) else None,
            tool=self.call.name if isinstance(self.call.name, str) else repr(self.call.name),
            args_hash=self.args_hash() if asks else self.hash,
            review_mode=self.mode, interaction_mode=self.context.interaction_mode,
            roles=roles if asks else (), approvals=approvals if asks else 0,
            expires_in=expires if asks else None, mandatory=mandatory and asks,
            requires=requires if asks else (), passkey=passkey,
            grant_id=grant_id, review=self.review_record,
        )
