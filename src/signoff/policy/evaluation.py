"""The evaluation order of docs/policy.md, one step after another.

The order is the contract (docs/policy.md):

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

import posixpath
from collections.abc import Sequence
from typing import TYPE_CHECKING

from signoff import inputs
from signoff.canonical import parse_args
from signoff.errors import InvalidArguments, InvalidInput
from signoff.globs.pathglob import is_sensitive
from signoff.model import Effect, Reason, ReviewMode, Step, Verdict
from signoff.policy.asking import Asking, mandatory_codes
from signoff.policy.definitions import changed_reason
from signoff.policy.matching import (
    DEFAULT_ALLOW,
    ToolView,
    admission,
    rule_matches,
    unknown_reason,
)
from signoff.policy.memory import Memory
from signoff.policy.protected import protected_reasons
from signoff.policy.reads import as_list, secret_reads
from signoff.policy.scope import DEVICE_SINKS, ScopeResult, judge_scope
from signoff.policy.spec import Rule
from signoff.shell.globoverlap import can_name, has_glob

if TYPE_CHECKING:
    from signoff.shell import ShellAnalysis, SimpleCommand

_MAX_MEMO = 4096


def _shown(name: object) -> str:
    """A refused tool name as the model may see it again: quoted, escaped, not too long."""
    text = ascii(name)
    return text if len(text) <= 80 else text[:79] + "…"


class Evaluation(Asking):
    """One call through the order; ``run()`` returns its verdict."""

    def run(self) -> Verdict:
        call = self.call
        if not isinstance(call.id, str) or not call.id.strip():
            return self.deny(Step.WELL_FORMED, "missing_call_id",
                             "This tool call has no id, so no decision can be bound to it; "
                             "it was not run.")
        name = call.name
        problem = inputs.tool_name_problem(name)
        if problem is not None:
            return self.deny(Step.WELL_FORMED, "invalid_tool_name",
                             f"Tool name {_shown(name)} is not a valid tool name: {problem}.")
        try:  # the input contract (signoff.inputs): what is stored must be storable and seen
            inputs.identifier("call id", call.id)
            inputs.optional_text("description", call.description, inputs.DESCRIPTION_MAX)
        except InvalidInput as exc:
            return self.deny(Step.WELL_FORMED, exc.code,
                             f"This call to {name!r} was refused: {exc.message}; it was not run.")
        try:
            self.args = parse_args(call.args)
        except InvalidArguments as exc:
            return self.deny(Step.WELL_FORMED, exc.code,
                             f"The arguments of {name!r} were refused: {exc.message}.")
        view = self.view = self.policy.view(name)
        self.raise_risk(view.base_risk)

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
            # The analyser is imported by the first call that runs a shell command.
            from signoff.shell import analyze  # noqa: PLC0415
            from signoff.shell.concerns import shell_concerns  # noqa: PLC0415
            from signoff.shell.dangers import classify  # noqa: PLC0415

            analysis = self.analysis = analyze(command)
            for danger in classify(analysis):
                self.raise_risk(danger.risk)
                self.reasons.append(Reason(step=Step.CLASSIFIER, code=danger.code,
                                           text=danger.text))
            for concern in shell_concerns(analysis):
                self.concern(concern.code, concern.text, concern.risk)

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
        forced = self.writes_and_concerns(view, analysis, scope)
        if denies:
            first = denies[0]
            return self.verdict(Effect.DENY, first.code or "denied", self.deny_message(first))
        hinted = view.hinted
        if hinted is not None and hinted.treatment == "mandatory" and not forced:
            forced = [Reason(step=Step.MANDATORY_ASK, code="mcp_hint", text=hinted.text)]
            self.reasons.append(forced[0])
        if call.definition_changed:  # the rug pull: asked anew (signoff.policy.definitions)
            forced.append(changed_reason(name))
            self.reasons.append(forced[-1])
        if mandatory or forced or (scope.outside and ws is not None and ws.mandatory):
            if analysis is not None and any(r.code in mandatory_codes() for r in forced):
                for finding in analysis.never_allow:  # what made the line opaque, by name
                    if finding.code not in mandatory_codes():
                        self.reasons.append(Reason(step=Step.SHELL, code=finding.code,
                                                   text=finding.text))
            if forced and not mandatory:
                return self.human(mandatory=True, rules=(), code=forced[0].code or "mandatory_ask",
                                  what="; ".join(r.text for r in forced[:2]))
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
            if hinted is not None and name not in self.config.gated:
                self.reasons.append(Reason(step=Step.GATED, code="mcp_hint", text=hinted.text))
                return self.by_mode("mcp_hint", (), hinted.text)
            self.reasons.append(Reason(step=Step.GATED, code="gated",
                                       text=f"{name} is a gated tool"))
            return self.by_mode("gated", (), f"gated tool {name}")
        if not view.known:
            self.reasons.append(unknown_reason(name))
            if self.config.unknown_tools == "deny":
                return self.verdict(Effect.DENY, "unknown_tool",
                                    f"The tool {name!r} is not permitted by policy.")
            if self.config.unknown_tools == "ask":
                return self.by_mode("unknown_tool", (), f"unknown tool {name}")
        self.reasons.append(DEFAULT_ALLOW)
        return self.verdict(Effect.ALLOW, "allowed", "Allowed.")

    def ordered_rules(self, analysis: ShellAnalysis | None, scope: ScopeResult) -> Verdict | None:
        """Step 6: allow and non-mandatory ask rules in file order, first match wins.

        For a shell call every command (a wrapper's command too, but not the argument
        suffixes shown to deny rules) needs an allow rule that admits it: its pattern
        matches and its command model finds nothing the pattern does not name
        (``signoff.policy.admit``); and every redirection that writes needs a
        matching allow rule whose ``writes`` covers the path.
        """
        assert self.view is not None
        rules = self.view.ordered
        if analysis is None:
            for rule in rules:
                if not rule.commands and rule_matches(rule, self.args, None, scope.resolved,
                                                      any_command=False):
                    return self.rule_decides(rule)
            return None
        first: dict[int, Rule] = {}
        exact: set[int] = set()
        refused: list[str] = []
        required = [i for i, c in enumerate(analysis.commands) if not c.deny_only]
        # Without argument patterns a command's first rule depends on its words alone:
        # remember it per tool and argv (git status, cat, … recur in every call).
        memo = None if any(r.args for r in rules) else self.policy._command_rules
        for index in required:
            command = analysis.commands[index]
            key = (self.view.name, command.argv, command.literal)
            found = memo.get(key) if memo is not None else None
            if found is None:
                found = self.first_rule(rules, analysis, scope, command)
                if memo is not None:
                    if len(memo) >= _MAX_MEMO:
                        memo.clear()
                    memo[key] = found
            chosen, is_exact, why_not = found
            refused.extend(why_not)
            if is_exact:
                exact.add(index)
            if chosen is not None:
                first[index] = chosen
        asked = next((r for r in first.values() if r.effect is Effect.ASK), None)
        if asked is not None:
            return self.rule_decides(asked)
        for finding in analysis.never_allow:
            self.reasons.append(Reason(step=Step.SHELL, code=finding.code, text=finding.text))
        for text in dict.fromkeys(refused[:3]):
            self.reasons.append(Reason(step=Step.SHELL, code="not_admitted", text=text))
        allowable = analysis.allowable or (bool(exact) and analysis.waivable(exact))
        covered = bool(required) and all(i in first for i in required)
        unwritten = self.unadmitted_writes(analysis, scope, first) if covered else []
        for text in unwritten[:3]:
            self.reasons.append(Reason(step=Step.SHELL, code="write_not_admitted", text=text))
        if allowable and covered and not unwritten:
            for rule in dict.fromkeys(first.values()):
                self.rule_reason(Step.ALLOW_RULE, rule, "rule_allow")
            return self.verdict(Effect.ALLOW, "rule_allow", "Allowed by policy.")
        uncovered = [analysis.commands[i] for i in required if i not in first]
        if uncovered and allowable:
            names = ", ".join(repr(" ".join(c.argv)[:60]) for c in uncovered[:3])
            self.reasons.append(Reason(step=Step.SHELL, code="not_allowed",
                                       text=f"no allow rule admits {names}"))
        return None

    def first_rule(self, rules: Sequence[Rule], analysis: ShellAnalysis, scope: ScopeResult,
                   command: SimpleCommand) -> tuple[Rule | None, bool, tuple[str, ...]]:
        """The first rule that matches and admits ``command``; whether it names it exactly;
        and why the allow rules that matched before it did not admit it."""
        refused: list[str] = []
        for rule in rules:
            if not rule_matches(rule, self.args, analysis, scope.resolved,
                                any_command=False, command=command):
                continue
            if rule.effect is Effect.ALLOW and rule.commands:
                how = admission(rule, command)
                if isinstance(how, str):
                    refused.append(how)
                    continue
                return rule, how, tuple(refused)
            return rule, False, tuple(refused)
        return None, False, tuple(refused)

    def unadmitted_writes(self, analysis: ShellAnalysis, scope: ScopeResult,
                          first: dict[int, Rule]) -> list[str]:
        """Redirections that write, which no admitting rule's ``writes`` covers."""
        out: list[str] = []
        patterns = [p for rule in dict.fromkeys(first.values()) for p in rule.writes]
        root = self.policy.workspace.root if self.policy.workspace else None
        for ref in analysis.paths:
            if not ref.write or not ref.redirect or (ref.literal and ref.path in DEVICE_SINKS):
                continue
            names = [ref.path, posixpath.normpath(ref.path)]
            resolved = [v.resolved for v in scope.written if v.given == ref.path and v.resolved]
            names += resolved
            if root is not None:
                names += [posixpath.relpath(r, root) for r in resolved
                          if r == root or r.startswith(root.rstrip("/") + "/")]
            if not ref.literal or not any(p.matches(n) for p in patterns for n in names):
                out.append(f"the redirection to {ref.path!r} writes a file no allow rule's "
                           "writes names")
        return out

    def writes_and_concerns(self, view: ToolView, analysis: ShellAnalysis | None,
                            scope: ScopeResult) -> list[Reason]:
        """Sensitive writes, outside writes and the concerns the policy always asks about."""
        # The gate's own files and the harnesses' settings: asked whatever always_ask says.
        forced: list[Reason] = protected_reasons(self, view, analysis, scope)
        always = self.config.always_ask
        for given, secret, searched in secret_reads(
                self.config.secrets, view.spec, self.args, analysis, scope,
                expanded=self.policy.workspace is not None):
            what = "a glob that can name a file" if has_glob(given) else "a file"
            text = f"reads {given!r}, {what} that holds credentials ({secret})"
            if searched is not None:
                text = (f"searches {searched!r}, which holds {given!r}, a file that holds "
                        f"credentials ({secret}); a search that leaves it out needs no "
                        "human (a narrower path or glob, --include, --exclude)")
            reason = self.concern("secret_read", text)
            if "secret_read" in always:
                forced.append(reason)
        written = [(v.given, v.resolved) for v in scope.written]
        if not scope.written:  # no workspace: judge the paths as given
            if analysis is not None:
                written = [(r.path, None) for r in analysis.paths if r.write and r.literal]
            elif view.spec is not None and view.spec.writes:
                written = [(str(v), None) for name in view.spec.paths
                           for v in as_list(self.args.get(name))]
        seen: set[str] = set()
        for given, resolved in written:
            if given in DEVICE_SINKS:
                continue
            hit = is_sensitive(given, self.config.sensitive) or (
                resolved is not None and is_sensitive(resolved, self.config.sensitive)) or (
                can_name(given, self.config.sensitive) if has_glob(given) else None)
            if hit and given not in seen:
                seen.add(given)
                what = "a glob that can name a sensitive path" if has_glob(given) \
                    else "a sensitive path"
                reason = self.concern("sensitive_write", f"writes {given!r}, {what} "
                                      f"({hit}): tools run or trust what it holds")
                if "sensitive_write" in always:
                    forced.append(reason)
        if analysis is not None:  # a command with no model may write any file it names
            for ref in analysis.paths:
                if ref.write or ref.program or not ref.literal or not 0 <= ref.command < len(
                        analysis.commands):
                    continue
                inv = analysis.commands[ref.command].invocation
                if (inv is not None and inv.modelled) or ref.path in seen:
                    continue
                hit = is_sensitive(ref.path, self.config.sensitive)
                if hit:
                    seen.add(ref.path)
                    name = analysis.commands[ref.command].basename
                    reason = self.concern(
                        "sensitive_write", f"{name} (no command model) names {ref.path!r}, a "
                        f"sensitive path ({hit}): it may write it")
                    if "sensitive_write" in always:
                        forced.append(reason)
        ws = self.config.workspace
        if ws is not None and ws.outside == "approve":
            for verdict in scope.outside_writes[:3]:
                reason = self.concern("outside_write", f"writes {verdict.given!r}, outside "
                                      f"workspace {ws.name!r}")
                if "outside_write" in always:
                    forced.append(reason)
        for reason in self.reasons:
            if reason.step is Step.SHELL and reason.code in mandatory_codes() and \
                    reason not in forced:
                forced.append(reason)
                continue
            if reason.step is Step.SHELL and reason.code in always and \
                    reason.code not in ("sensitive_write", "outside_write") and \
                    reason not in forced and reason.effect is Effect.ASK:
                forced.append(reason)
        return forced

    def rule_decides(self, rule: Rule) -> Verdict:
        if rule.effect is Effect.ALLOW:
            self.rule_reason(Step.ALLOW_RULE, rule, "rule_allow")
            return self.verdict(Effect.ALLOW, "rule_allow", "Allowed by policy.")
        self.rule_reason(Step.ASK_RULE, rule, "rule_ask")
        return self.by_mode("rule_ask", (rule,), rule.describe())

    def rejection(self) -> Reason | None:
        thread = self.context.thread_id
        if not thread:
            return None
        memory = self.policy.memory
        if isinstance(memory, Memory) and not memory._rejections:
            return None
        probe = getattr(memory, "rejected_tools", None)
        if probe is not None and self.call.name not in probe(thread):
            return None  # nothing rejected for this tool here: no need to hash the arguments
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
            self.raise_risk(ws.risk)
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
