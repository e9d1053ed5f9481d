"""A standing approval for a thread, granted with the decision that approves a request.

By default a grant covers exactly the approved canonical arguments (bound to their hash,
a shell command kept as a command pattern so it is judged like an allow rule's); an
approver may give patterns instead, which must compile (RE2) or the decision is undone.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from signoff.audit import AuditKind, to_us
from signoff.errors import InvalidDecision
from signoff.identity import Identity
from signoff.ids import new_id
from signoff.model import ApprovalRequest, Decision, Grant, GrantScope
from signoff.policy import PolicyConfig
from signoff.policy.patterns import compile_command_pattern, compile_value_pattern, value_text
from signoff.store.base import Tx

_GLOB_META = re.compile(r"([*?\[])")


def grant_thread(tx: Tx, request: ApprovalRequest, decision: Decision, identity: Identity, *,
                 now: float, config: PolicyConfig) -> None:
    """A thread grant: by default for these exact canonical arguments (their hash; the
    exact patterns keep a shell command judged like an allow rule's), else for the
    patterns the approver gave, recorded as given."""
    args = json.loads(request.run_args)
    exact = decision.grant_args is None
    patterns = exact_patterns(config, request.tool, args) if exact else \
        dict(decision.grant_args or {})
    if patterns is None:
        return
    if not exact:
        check_patterns(config, request.tool, patterns)
    bound = request.run_hash if exact else None
    grant = Grant(id=new_id("grant_"), scope=GrantScope.THREAD,
                  tool=request.tool, args=patterns, thread_id=request.thread_id,
                  definition_hash=request.definition_hash,
                  session_id=request.session_id, created_by=identity.name, args_hash=bound)
    tx.insert_grant(grant, at=now, request_id=request.id)
    tx.append_audit(AuditKind.GRANT_CREATED, at_us=to_us(now), request_id=request.id,
                    actor=identity.name, data={"grant_id": grant.id, "tool": grant.tool,
                                               "args": patterns, "args_hash": bound,
                                               "scope": "thread"})


def check_patterns(config: PolicyConfig, tool: str, patterns: Mapping[str, str]) -> None:
    """An approver's grant patterns must compile (RE2: nothing that backtracks), or the
    grant would silently match nothing: ``invalid_grant_pattern``, the decision undone."""
    spec = config.tools.get(tool)
    shell = spec.shell if spec is not None else None
    for name, pattern in patterns.items():
        try:
            if name == shell:
                compile_command_pattern(pattern)
            else:
                compile_value_pattern(pattern)
        except ValueError as exc:
            raise InvalidDecision(f"grant pattern for {name!r} cannot be used: {exc}",
                                  code="invalid_grant_pattern") from None


def exact_patterns(config: PolicyConfig, tool: str,
                   args: Mapping[str, Any]) -> dict[str, str] | None:
    """Patterns matching exactly these arguments (a shell command as a command pattern)."""
    spec = config.tools.get(tool)
    shell = spec.shell if spec is not None else None
    out: dict[str, str] = {}
    for name, value in args.items():
        if name == shell and isinstance(value, str):
            try:
                words = shlex.split(value)
            except ValueError:
                return None
            if not words:
                return None
            out[name] = shlex.join(_GLOB_META.sub(r"[\1]", w) for w in words)
        else:
            out[name] = "re:" + re.escape(value_text(value))
    return out
