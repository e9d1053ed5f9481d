"""``signoff check --explain``: how a shell call was read, command by command.

For each command the shell analysis found: its argv, the model that read it,
every option and operand with its class (inert, read, write, exec, network,
unknown) and why, and which rule admitted it — or why the rule that matched
did not. This is what a user needs to write a tight allow rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signoff.model import Effect
from signoff.policy.engine import Policy
from signoff.policy.matching import admission, rule_matches
from signoff.shell import analyze


def explain_call(policy: Policy, tool: str, args: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per command of a shell call (empty for a tool with no shell argument)."""
    view = policy.view(tool)
    if view.spec is None or view.spec.shell is None:
        return []
    command = args.get(view.spec.shell)
    if not isinstance(command, str):
        return []
    analysis = analyze(command)
    out: list[dict[str, Any]] = []
    for cmd in analysis.commands:
        if cmd.deny_only:
            continue
        inv = cmd.invocation
        entry: dict[str, Any] = {
            "argv": list(cmd.argv),
            "nested": cmd.nested,
            "model": inv.model if inv is not None and inv.modelled else None,
            "parts": [{"kind": p.kind.value, "word": p.word, "option": p.option,
                       "value": p.value, "declared": p.declared, "why": p.why}
                      for p in (inv.parts if inv is not None else ())],
            "concerns": [c.code for c in (inv.concerns if inv is not None else ())],
            "rule": None,
            "refused": [],
        }
        for rule in view.ordered:
            if not rule_matches(rule, args, analysis, {}, any_command=False, command=cmd):
                continue
            if rule.effect is Effect.ALLOW and rule.commands:
                how = admission(rule, cmd)
                if isinstance(how, str):
                    entry["refused"].append(how)
                    continue
            entry["rule"] = f"{rule.id} ({rule.effect.value})"
            break
        out.append(entry)
    return out


def format_explained(entries: list[dict[str, Any]]) -> str:
    lines = ["  parsed:"]
    for entry in entries:
        model = entry["model"] or "no model: every word is judged as a path"
        lines.append(f"    $ {' '.join(entry['argv'])[:100]}   [{model}]")
        for part in entry["parts"]:
            why = f" — {part['why']}" if part["why"] else ""
            mark = " (declared)" if part["declared"] else ""
            lines.append(f"        {part['kind']:<8} {part['word'][:60]}{mark}{why}")
        for refused in entry["refused"]:
            lines.append(f"      not admitted: {refused}")
        lines.append(f"      rule: {entry['rule'] or 'none admits it'}")
    return "\n".join(lines)
