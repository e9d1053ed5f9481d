"""Which rules apply to a tool, and whether a rule or grant matches one call.

``ToolView`` is computed once per tool name and cached by the policy: the
rules whose tool glob matches, split by the step of the evaluation order they
belong to. That keeps a call to an unrelated tool from scanning every rule.
It also says (``quick``) when no argument of a call can change the verdict,
which lets ``signoff.policy.quick`` skip the steps that read arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from signoff.model import Effect, Grant, GrantScope, Reason, Risk, Step
from signoff.policy.hints import HintEffect, ToolHints, hint_effect
from signoff.policy.patterns import (
    CommandPattern,
    ValuePattern,
    compile_command_pattern,
    compile_value_pattern,
    tool_matches,
    value_text,
)
from signoff.policy.spec import ArgRule, PolicyConfig, Rule, ToolSpec

if TYPE_CHECKING:
    from signoff.shell import ShellAnalysis, SimpleCommand
    from signoff.shell.commands import Part

_MISSING = object()
# The reason every default allow ends with (step 8).
DEFAULT_ALLOW = Reason(step=Step.DEFAULT, code="default_allow",
                       text="no rule asks or denies; allowed by default")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolView:
    name: str
    spec: ToolSpec | None
    known: bool
    gated: bool
    clarification: bool
    base_risk: Risk
    deny: tuple[Rule, ...]
    mandatory_ask: tuple[Rule, ...]
    ordered: tuple[Rule, ...]  # allow and non-mandatory ask rules, in file order
    # The reasons of the default allow when no argument can change a call's verdict
    # (no rules, no paths, no working directory, no shell, not gated, not asked about as
    # unknown, not the clarification tool); ``None`` otherwise.
    quick: tuple[Reason, ...] | None = None
    hinted: HintEffect | None = None  # what the MCP server's annotations add (hints.py)


def build_view(config: PolicyConfig, tool: str, hints: ToolHints | None = None) -> ToolView:
    rules = [r for r in config.rules if tool_matches(r.tool, tool)]
    spec = config.tools.get(tool)
    clarification = tool == config.clarification_tool
    # A hint never makes a tool known: an unknown tool the policy denies stays denied
    # (a hint can only add care, and nothing is more careful than the deny).
    known = (spec is not None or tool in config.gated or clarification
             or any(r.tool == tool for r in config.rules))
    hinted = None if not known and config.unknown_tools == "deny" else hint_effect(
        config.mcp, tool, hints)
    gated = tool in config.gated or hinted is not None
    if spec is not None and spec.risk is not None:
        base = spec.risk
    elif gated or not known or (spec is not None and spec.writes):
        base = Risk.MEDIUM
    else:
        base = Risk.LOW
    if hinted is not None:
        base = Risk.highest(base, hinted.risk)
    quick: tuple[Reason, ...] | None = None
    if not (rules or gated or clarification) and (spec is None or (
            spec.shell is None and not spec.paths and spec.cwd is None)):
        if known:
            quick = (DEFAULT_ALLOW,)
        elif config.unknown_tools == "allow":
            quick = (unknown_reason(tool), DEFAULT_ALLOW)
    return ToolView(
        name=tool, spec=spec, known=known, gated=gated, clarification=clarification,
        base_risk=base,
        deny=tuple(r for r in rules if r.effect is Effect.DENY),
        mandatory_ask=tuple(r for r in rules if r.effect is Effect.ASK and r.mandatory),
        ordered=tuple(r for r in rules if r.effect is Effect.ALLOW
                      or (r.effect is Effect.ASK and not r.mandatory)),
        quick=quick, hinted=hinted,
    )


def unknown_reason(tool: str) -> Reason:
    return Reason(step=Step.UNKNOWN_TOOL, code="unknown_tool",
                  text=f"the policy does not know the tool {tool!r}")


def rule_matches(
    rule: Rule,
    args: Mapping[str, Any],
    analysis: ShellAnalysis | None,
    resolved: Mapping[str, list[str]],
    *,
    any_command: bool,
    command: SimpleCommand | None = None,
) -> bool:
    """Does ``rule`` (whose tool glob already matched) match this call?

    Deny and ask rules compare command names by basename and see nested
    commands (``any_command``); an allow rule judges the one ``command`` given.
    """
    every = rule.effect is Effect.ALLOW
    for arg in rule.args:
        if not _arg_matches(arg, args, resolved, every=every):
            return False
    if not rule.commands:
        return True
    if analysis is None:
        return False
    by_basename = rule.effect is not Effect.ALLOW
    if command is not None:
        if not command.argv:
            return False
        candidates = rule.patterns_for(command.argv[0])
        if by_basename:
            return any(_matches_any(p, command) for p in candidates)
        return any(p.matches(command.argv, by_basename=False) or (
            command.globals_inert and command.sub_argv is not None
            and p.matches(command.sub_argv, by_basename=False)) for p in candidates)
    if any_command:
        return any(_matches_any(p, c) for c in analysis.commands if c.argv
                   for p in rule.patterns_for(c.argv[0]))
    return False


def _matches_any(pattern: CommandPattern, command: SimpleCommand) -> bool:
    """Deny and ask rules: by basename, with or without global options (git -c x push)."""
    return pattern.matches(command.argv, by_basename=True) or (
        command.sub_argv is not None and pattern.matches(command.sub_argv, by_basename=True))


def _grant_admits(pattern: CommandPattern, command: SimpleCommand) -> bool:
    """A grant's command pattern admits a command as an allow rule's would: an exact one
    (the very command a human approved for the thread) that command, a wildcard one only
    what its command model finds harmless or the pattern names."""
    forms = [command.argv]
    if command.globals_inert and command.sub_argv is not None:
        forms.append(command.sub_argv)
    if not any(pattern.matches(a, by_basename=False) for a in forms):
        return False
    # A shell command's: the command models are imported with the analyser.
    from signoff.policy.admit import blocking, is_exact, named  # noqa: PLC0415
    from signoff.shell.commands import model_for  # noqa: PLC0415

    if is_exact(pattern):
        return True
    inv = command.invocation
    if inv is None or not inv.modelled:
        return True
    return not blocking(inv, named(pattern, model_for(command.argv[0])))


def admission(rule: Rule, command: SimpleCommand) -> bool | str:
    """Does allow ``rule`` (whose pattern matched) admit ``command``'s parsed arguments?

    ``True``: an exact pattern names this very command line (its own never-allow
    findings are waived); ``False``: admitted by the model; a string: refused, and why.
    """
    argv_forms = [command.argv]
    if command.globals_inert and command.sub_argv is not None:
        argv_forms.append(command.sub_argv)
    matching = [p for p in rule.patterns_for(command.argv[0])
                if any(p.matches(a, by_basename=False) for a in argv_forms)]
    from signoff.policy.admit import blocking, is_exact, named  # noqa: PLC0415
    from signoff.shell.commands import model_for  # noqa: PLC0415

    if any(is_exact(p) for p in matching):
        return True
    inv = command.invocation
    if inv is None or not inv.modelled:
        return False
    spec = model_for(command.argv[0])
    best: list[Part] | None = None
    for pattern in matching:
        parts = blocking(inv, named(pattern, spec))
        if not parts:
            return False
        if best is None or len(parts) < len(best):
            best = parts
    assert best is not None
    part = best[0]
    return (f"rule {rule.id!r} does not admit {part.show()[:60]!r} of {inv.model}: "
            f"{part.kind.value}{' — ' + part.why if part.why else ''}")


def _arg_matches(arg: ArgRule, args: Mapping[str, Any], resolved: Mapping[str, list[str]],
                 *, every: bool) -> bool:
    """Does the argument's value match? A list matches an allow rule (``every``) only if
    each element does, as written, and never when empty: an allow names what it admits, and
    one foreign recipient among colleagues is not named. A deny or ask rule, the careful
    direction, matches a list if any element does, or any resolved path."""
    value = args.get(arg.name, _MISSING)
    if value is _MISSING:
        return False
    if isinstance(value, list):
        if every:
            return bool(value) and all(arg.matches(value_text(v)) for v in value)
        if any(arg.matches(value_text(v)) for v in value):
            return True
    elif arg.matches(value if isinstance(value, str) else value_text(value)):
        return True
    return any(arg.matches(p) for p in resolved.get(arg.name, ()))


@lru_cache(maxsize=1024)
def _grant_pattern(source: str) -> ValuePattern:
    return compile_value_pattern(source)


def grant_applies(
    grant: Grant,
    tool: str,
    args: Mapping[str, Any],
    now: float,
    *,
    shell_arg: str | None = None,
    analysis: ShellAnalysis | None = None,
    definition_hash: str | None = None,
    call_hash: str | None = None,
) -> bool:
    """An active grant for this very tool whose argument patterns all match.

    The grant's tool is a literal name, never a pattern: a tool may be called ``*``.
    A grant made for exact arguments (``args_hash``, "approve for this thread") admits
    only a call whose canonical arguments hash to it (``call_hash``): an argument added
    or changed is asked again. A grant with patterns admits only calls whose every
    argument it names (a ``bcc`` it never mentions is not covered); one with none
    covers the tool whatever its arguments.

    For a shell tool the pattern on the command argument is a *command
    pattern*, judged like an allow rule: every simple command must match it
    and nothing may be never-allow, so a grant for ``make *`` does not admit
    ``make build && curl x | sh``.
    """
    if grant.tool != tool:
        return False
    if grant.args_hash is not None and grant.args_hash != call_hash:
        return False
    if grant.args and not grant.args.keys() >= args.keys():
        return False
    if grant.definition_hash is not None and grant.definition_hash != definition_hash:
        return False  # granted for another definition of the tool (policy.definitions)
    if grant.expires_at is not None and now >= grant.expires_at:
        return False
    limit = grant.max_uses if grant.max_uses is not None else (
        1 if grant.scope is GrantScope.ONCE else None)
    if limit is not None and grant.uses >= limit:
        return False
    for name, pattern in grant.args.items():
        if name not in args:
            return False
        if name == shell_arg:
            if analysis is None or not analysis.allowable or not analysis.commands:
                return False
            try:
                command = compile_command_pattern(pattern)
            except ValueError:
                return False
            if not all(_grant_admits(command, c) for c in analysis.commands if not c.deny_only):
                return False
            continue
        try:
            compiled = _grant_pattern(pattern)
        except Exception:  # a bad stored pattern matches nothing
            return False
        if not compiled.matches(value_text(args[name])):
            return False
    return True
