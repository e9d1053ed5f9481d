"""``Policy.evaluate``: one call and its run context in, one explained ``Verdict`` out.

The order is the contract (DESIGN §2):

1. well-formedness → deny;
2. mandatory deny rules, 3. rejection memory, 4. workspace scope,
   5. mandatory ask rules — all run, the strongest wins
   (deny > mandatory ask > scope ask);
6. allow / ask rules, first match wins (shell commands judged one by one),
7. gated and unknown tools → ask by review mode (grant, full, auto reviewer),
8. everything else → allow;

then the interaction mode: an ask that needs a human in an unattended run is
``blocked``. Evaluation touches no database and runs nothing; memory of
rejections and grants comes in through ``DecisionMemory``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from signoff.canonical import args_hash, parse_args
from signoff.errors import InvalidArguments
from signoff.model import (
    Effect,
    Reason,
    ReviewMode,
    Risk,
    RunContext,
    Step,
    ToolCall,
    Verdict,
)
from signoff.policy.classify import classify
from signoff.policy.config import PolicyConfig, Rule, load_policy_file, parse_policy
from signoff.policy.matching import ToolView, build_view, grant_applies, rule_matches
from signoff.policy.memory import DecisionMemory, Memory
from signoff.policy.modes import clamp
from signoff.policy.scope import ScopeResult, judge_scope
from signoff.policy.shell import ShellAnalysis, analyze
from signoff.policy.workspace import Workspace
from signoff.review import Reviewer, ReviewOutcome, ReviewRequest, RiskReviewer

_DEFAULT_CONTEXT = RunContext()
_MAX_VIEWS = 4096


class Policy:
    """A loaded policy plus the memory and reviewer it consults. Safe to share between threads."""

    def __init__(
        self,
        config: PolicyConfig,
        *,
        memory: DecisionMemory | None = None,
        reviewer: Reviewer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.memory: DecisionMemory = memory if memory is not None else Memory()
        self.reviewer: Reviewer = reviewer if reviewer is not None else RiskReviewer()
        self.clock = clock
        self.workspace: Workspace | None = None
        if config.workspace is not None:
            ws = config.workspace
            self.workspace = Workspace(ws.root, name=ws.name, allowlist=ws.allowlist)
        self._views: dict[str, ToolView] = {}

    @property
    def version(self) -> str:
        return self.config.version

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> Policy:
        return cls(load_policy_file(path), **kwargs)

    @classmethod
    def from_toml(cls, text: str, *, source: str = "<policy>", **kwargs: Any) -> Policy:
        return cls(parse_policy(text, source=source), **kwargs)

    def view(self, tool: str) -> ToolView:
        view = self._views.get(tool)
        if view is None:
            view = build_view(self.config, tool)
            if len(self._views) >= _MAX_VIEWS:
                self._views.clear()
            self._views[tool] = view
        return view

    def evaluate(self, call: ToolCall, context: RunContext | None = None) -> Verdict:
        return _Evaluation(self, call, context or _DEFAULT_CONTEXT).run()

    def evaluate_turn(
        self, calls: Sequence[ToolCall], context: RunContext | None = None
    ) -> list[Verdict]:
        """Evaluate one model turn; calls sharing an id are all denied (no decision could bind)."""
        counts: dict[object, int] = {}
        for call in calls:
            counts[call.id] = counts.get(call.id, 0) + 1
        out = []
        for call in calls:
            ev = _Evaluation(self, call, context or _DEFAULT_CONTEXT)
            if isinstance(call.id, str) and call.id and counts[call.id] > 1:
                out.append(ev.deny(
                    Step.WELL_FORMED, "duplicate_call_id",
                    f"Tool call id {call.id!r} appears {counts[call.id]} times in one turn; "
                    "no decision can be bound to it, so none of those calls was run."))
            else:
                out.append(ev.run())
        return out


class _Evaluation:
    """The state of one evaluation: reasons gathered so far and the risk they imply."""

    def __init__(self, policy: Policy, call: ToolCall, context: RunContext) -> None:
        self.policy = policy
        self.config = policy.config
        self.call = call
        self.context = context
        requested = context.review_mode or self.config.default_review_mode
        self.mode = clamp(requested, self.config.ceiling)
        self.reasons: list[Reason] = []
        if self.mode is not requested:
            self.reasons.append(Reason(
                step=Step.MODE, code="ceiling",
                text=f"review mode {requested.value} clamped to the operator ceiling "
                     f"{self.mode.value}"))
        self.risks: list[Risk] = []
        self.args: dict[str, Any] = {}
        self.hash: str | None = None
        self.view: ToolView | None = None
        self.analysis: ShellAnalysis | None = None

    # ---- the order -------------------------------------------------------------------------

    def run(self) -> Verdict:
        call = self.call
        if not isinstance(call.id, str) or not call.id.strip():
            return self.deny(Step.WELL_FORMED, "missing_call_id",
                             "This tool call has no id, so no decision can be bound to it; "
                             "it was not run.")
        name = call.name
        if not isinstance(name, str) or not name or len(name) > 256 or not name.isprintable():
            return self.deny(Step.WELL_FORMED, "invalid_tool_name",
                             f"Tool name {name!r} is not a valid tool name.")
        try:
            self.args = parse_args(call.args)
        except InvalidArguments as exc:
            return self.deny(Step.WELL_FORMED, exc.code,
                             f"The arguments of {name!r} were refused: {exc.message}.")
        view = self.view = self.policy.view(name)
        self.risks.append(view.base_risk)

        if view.clarification and (self.mode is ReviewMode.FULL
                                   or self.context.interaction_mode.unattended):
            why = ("full review mode" if self.mode is ReviewMode.FULL
                   else f"this {self.context.interaction_mode.value} run")
            return self.deny(
                Step.CLARIFICATION, "clarification_withdrawn",
                f"{name} is not available in {why}: no one will answer. Proceed on minimal, "
                "reversible, clearly stated assumptions, or stop and report what decision "
                "is missing.")

        analysis: ShellAnalysis | None = None
        if view.spec is not None and view.spec.shell is not None:
            command = self.args.get(view.spec.shell)
            if not isinstance(command, str):
                return self.deny(Step.WELL_FORMED, "invalid_shell_argument",
                                 f"{name} needs a string argument {view.spec.shell!r} "
                                 "holding the command.")
            analysis = self.analysis = analyze(command)
            for danger in classify(analysis):
                self.risks.append(danger.risk)
                self.reasons.append(Reason(step=Step.CLASSIFIER, code=danger.code,
                                           text=danger.text))

        # Steps 2–5: all run; strongest wins.
        scope = judge_scope(self.policy.workspace, self.config.workspace, view.spec,
                            self.args, analysis)
        denies: list[Reason] = []
        for rule in view.deny:
            if rule_matches(rule, self.args, analysis, scope.resolved, any_command=True):
                denies.append(self.rule_reason(Step.MANDATORY_DENY, rule, "rule_deny"))
        rejection = self.rejection()
        if rejection is not None:
            denies.append(rejection)
        denies.extend(self.scope_reasons(scope))
        mandatory: list[Rule] = [
            rule for rule in view.mandatory_ask
            if rule_matches(rule, self.args, analysis, scope.resolved, any_command=True)
        ]
        for rule in mandatory:
            self.rule_reason(Step.MANDATORY_ASK, rule, "mandatory_ask")
        ws = self.config.workspace
        if denies:
            first = denies[0]
            return self.verdict(Effect.DENY, first.code or "denied", self.deny_message(first))
        if mandatory or (scope.outside and ws is not None and ws.mandatory):
            return self.human(mandatory=True, rules=mandatory,
                              what=self.ask_what(mandatory, scope))
        if scope.outside:
            return self.by_mode("outside_workspace", (), f"access outside workspace "
                                f"'{ws.name if ws else ''}': {scope.outside[0].given}")

        # Steps 6–8.
        decided = self.ordered_rules(analysis, scope)
        if decided is not None:
            return decided
        if view.gated:
            self.reasons.append(Reason(step=Step.GATED, code="gated",
                                       text=f"{name} is a gated tool"))
            return self.by_mode("gated", (), f"gated tool {name}")
        if not view.known:
            self.reasons.append(Reason(step=Step.UNKNOWN_TOOL, code="unknown_tool",
                                       text=f"the policy does not know the tool {name!r}"))
            if self.config.unknown_tools == "deny":
                return self.verdict(Effect.DENY, "unknown_tool",
                                    f"The tool {name!r} is not permitted by policy.")
            if self.config.unknown_tools == "ask":
                return self.by_mode("unknown_tool", (), f"unknown tool {name}")
        self.reasons.append(Reason(step=Step.DEFAULT, code="default_allow",
                                   text="no rule asks or denies; allowed by default"))
        return self.verdict(Effect.ALLOW, "allowed", "Allowed.")

    def ordered_rules(self, analysis: ShellAnalysis | None, scope: ScopeResult) -> Verdict | None:
        """Step 6: allow and non-mandatory ask rules in file order, first match wins."""
        assert self.view is not None
        rules = self.view.ordered
        if analysis is None:
            for rule in rules:
                if not rule.commands and rule_matches(rule, self.args, None, scope.resolved,
                                                      any_command=False):
                    return self.rule_decides(rule)
            return None
        first: dict[int, Rule] = {}
        for index, command in enumerate(analysis.commands):
            for rule in rules:
                if rule_matches(rule, self.args, analysis, scope.resolved, any_command=False,
                                command=command):
                    first[index] = rule
                    break
        asked = next((r for r in first.values() if r.effect is Effect.ASK), None)
        if asked is not None:
            return self.rule_decides(asked)
        for finding in analysis.never_allow:
            self.reasons.append(Reason(step=Step.SHELL, code=finding.code, text=finding.text))
        if analysis.allowable and analysis.commands and len(first) == len(analysis.commands):
            for rule in dict.fromkeys(first.values()):
                self.rule_reason(Step.ALLOW_RULE, rule, "rule_allow")
            return self.verdict(Effect.ALLOW, "rule_allow", "Allowed by policy.")
        uncovered = [c for i, c in enumerate(analysis.commands) if i not in first]
        if uncovered and analysis.allowable:
            names = ", ".join(repr(" ".join(c.argv)[:60]) for c in uncovered[:3])
            self.reasons.append(Reason(step=Step.SHELL, code="not_allowed",
                                       text=f"no allow rule admits {names}"))
        return None

    def rule_decides(self, rule: Rule) -> Verdict:
        if rule.effect is Effect.ALLOW:
            self.rule_reason(Step.ALLOW_RULE, rule, "rule_allow")
            return self.verdict(Effect.ALLOW, "rule_allow", "Allowed by policy.")
        self.rule_reason(Step.ASK_RULE, rule, "rule_ask")
        return self.by_mode("rule_ask", (rule,), rule.describe())

    # ---- asking ----------------------------------------------------------------------------

    def by_mode(self, code: str, rules: tuple[Rule, ...], what: str) -> Verdict:
        """A non-mandatory ask: a grant, full mode or the auto reviewer may answer it."""
        grant = self.matching_grant()
        if grant is not None:
            self.reasons.append(Reason(step=Step.GRANT, code="grant", rule=f"grant:{grant}",
                                       text=f"standing approval {grant} covers this call"))
            return self.verdict(Effect.ALLOW, "grant", "Allowed by a standing approval.",
                                source=f"grant:{grant}", grant_id=grant)
        if self.mode is ReviewMode.FULL:
            self.reasons.append(Reason(step=Step.MODE, code="mode_full",
                                       text="full review mode approves without review"))
            return self.verdict(Effect.ALLOW, "mode_full", "Allowed (full review mode).",
                                source="mode:full")
        if self.mode is ReviewMode.AUTO:
            outcome = self.review()
            if outcome is not None and outcome.approve:
                self.reasons.append(Reason(step=Step.REVIEWER, code="reviewer_approved",
                                           text=outcome.reason))
                return self.verdict(Effect.ALLOW, "reviewer_approved",
                                    "Allowed by the auto reviewer.", source="reviewer")
            self.reasons.append(Reason(
                step=Step.REVIEWER, code="reviewer_escalated",
                text=outcome.reason if outcome is not None else "reviewer gave no valid verdict"))
        return self.human(mandatory=False, rules=rules, what=what, code=code)

    def human(self, *, mandatory: bool, rules: Sequence[Rule], what: str,
              code: str = "mandatory_ask") -> Verdict:
        cfg = self.config
        interaction = self.context.interaction_mode
        if interaction.unattended:
            if not mandatory and cfg.unattended_asks == "allow" and not self.context.parent_call:
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

    def review(self) -> ReviewOutcome | None:
        request = ReviewRequest(call=self.call, args=self.args, context=self.context,
                                risk=Risk.highest(*self.risks), reasons=tuple(self.reasons))
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
                             analysis=self.analysis):
                return grant.id
        return None

    def rejection(self) -> Reason | None:
        thread = self.context.thread_id
        if not thread:
            return None
        memory = self.policy.memory
        if isinstance(memory, Memory) and not memory._rejections:
            return None
        found = memory.rejection_for(thread, self.call.name, self.args_hash())
        if found is None:
            return None
        alternatives = (" Alternatives offered: " + "; ".join(found.alternatives) + "."
                        if found.alternatives else "")
        reason = Reason(step=Step.REJECTION_MEMORY, code="rejected_before",
                        rule=f"request:{found.request_id}" if found.request_id else None,
                        effect=Effect.DENY,
                        text=f"A human already rejected this exact call: {found.reason}."
                             f"{alternatives} Do not retry the same call.")
        self.reasons.append(reason)
        return reason

    # ---- reasons and the verdict ------------------------------------------------------------

    def rule_reason(self, step: Step, rule: Rule, code: str) -> Reason:
        reason = Reason(step=step, rule=rule.id, effect=rule.effect, code=code,
                        text=rule.describe())
        self.reasons.append(reason)
        if rule.risk is not None:
            self.risks.append(rule.risk)
        return reason

    def scope_reasons(self, scope: ScopeResult) -> list[Reason]:
        denies: list[Reason] = []
        ws = self.config.workspace
        for listed in scope.allowlisted[:5]:
            self.reasons.append(Reason(
                step=Step.WORKSPACE, code="allowlisted", effect=Effect.ALLOW,
                text=f"{listed.given!r} is outside the workspace but on its allowlist"))
        for bad in scope.invalid:
            reason = Reason(step=Step.WORKSPACE, code=bad.code or "invalid_path",
                            effect=Effect.DENY, text=f"Access denied: {bad.note}")
            self.reasons.append(reason)
            denies.append(reason)
        if scope.outside and ws is not None:
            self.risks.append(ws.risk)
            effect = {"allow": Effect.ALLOW, "approve": Effect.ASK, "deny": Effect.DENY}[ws.outside]
            for out in scope.outside[:5]:
                reason = Reason(
                    step=Step.WORKSPACE, code="outside_workspace", effect=effect,
                    text=f"Access denied: {out.given!r} is outside workspace {ws.name!r}"
                    if effect is Effect.DENY else out.note)
                self.reasons.append(reason)
                if effect is Effect.DENY:
                    denies.append(reason)
            if ws.outside == "allow":
                scope.outside.clear()
        return denies

    def ask_what(self, rules: Sequence[Rule], scope: ScopeResult) -> str:
        if rules:
            return "; ".join(r.describe() for r in rules)
        return f"access outside the workspace: {scope.outside[0].given}"

    def deny_message(self, reason: Reason) -> str:
        if reason.step is Step.MANDATORY_DENY:
            return f"Denied by policy ({reason.text}). Do not retry this call."
        return reason.text

    def deny(self, step: Step, code: str, message: str) -> Verdict:
        self.reasons.append(Reason(step=step, code=code, effect=Effect.DENY, text=message))
        return self.verdict(Effect.DENY, code, message)

    def args_hash(self) -> str:
        if self.hash is None:
            self.hash = args_hash(self.args)
        return self.hash

    def verdict(self, effect: Effect, code: str, message: str, *, source: str = "policy",
                mandatory: bool = False, rules: Sequence[Rule] = (),
                grant_id: str | None = None) -> Verdict:
        cfg = self.config
        roles: tuple[str, ...] = cfg.default_roles
        approvals = cfg.default_approvals
        expires = cfg.default_expires
        if rules:
            roles = tuple(dict.fromkeys(r for rule in rules for r in rule.roles)) or roles
            approvals = max((r.approvals for r in rules if r.approvals), default=approvals)
            limits = [r.expires for r in rules if r.expires is not None]
            expires = min(limits) if limits else expires
        asks = effect in (Effect.ASK, Effect.BLOCKED)
        return Verdict(
            effect=effect, code=code, message=message, reasons=tuple(self.reasons),
            risk=Risk.highest(*self.risks), source=source, policy_version=cfg.version,
            decision_id="dec_" + os.urandom(10).hex(),
            call_id=self.call.id if isinstance(self.call.id, str) else None,
            tool=self.call.name if isinstance(self.call.name, str) else repr(self.call.name),
            args_hash=self.args_hash() if asks else self.hash,
            review_mode=self.mode, interaction_mode=self.context.interaction_mode,
            roles=roles if asks else (), approvals=approvals if asks else 0,
            expires_in=expires if asks else None, mandatory=mandatory and asks,
            grant_id=grant_id,
        )

