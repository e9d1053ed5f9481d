"""Turning an ``ask`` verdict into an immutable ``ApprovalRequest``.

The request freezes the call as canonical JSON text and its hash, and adds
what an approver needs: a summary generated *from the call itself* (the
model's own description is kept separately and shown as agent-supplied),
the expected effect, evidence references, what a write will change (a diff per
file, ``signoff.kernel.write_evidence``), and the versions of the resources the tool
declared preconditions on and of the files that diff was read from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from signoff.canonical import canonical_text
from signoff.ids import new_id
from signoff.inputs import stored_text
from signoff.kernel.tools import ToolEntry
from signoff.model import ApprovalRequest, RequestStatus, RunContext, ToolCall, Verdict
from signoff.policy.spec import PolicyConfig

_SUMMARY_VALUE = 120
SUMMARY_MAX = 2_000  # a summary and an expected effect: derived text, made storable


def new_request_id() -> str:
    return new_id("req_")


def build_request(
    *,
    call: ToolCall,
    args: Mapping[str, Any],
    verdict: Verdict,
    context: RunContext,
    config: PolicyConfig,
    tool: ToolEntry | None,
    agent: str | None,
    now: float,
    evidence: Sequence[str] = (),
    waiter: str | None = None,
    changes: Sequence[Mapping[str, Any]] = (),
    file_versions: Mapping[str, str] | None = None,
) -> ApprovalRequest:
    """``changes`` and ``file_versions``: the write evidence
    (``signoff.kernel.write_evidence``); the versions bind the files it was read from,
    beside the tool's own preconditions."""
    assert verdict.args_hash is not None and call.id is not None
    expires_at = now + verdict.expires_in if verdict.expires_in is not None else None
    if context.parent_call and expires_at is None:
        expires_at = now + config.default_expires if config.default_expires else now + 3600
    return ApprovalRequest(
        id=new_request_id(),
        call_id=call.id,
        tool=call.name,
        args=canonical_text(args),
        args_hash=verdict.args_hash,
        status=RequestStatus.PENDING,
        risk=verdict.risk,
        summary=stored_text(summarize(call.name, args, config, tool), SUMMARY_MAX),
        policy_version=verdict.policy_version,
        created_at=now,
        updated_at=now,
        thread_id=context.thread_id,
        run_id=context.run_id,
        session_id=context.session_id,
        parent_call=context.parent_call,
        principal=context.principal,
        agent=agent,
        description=call.description,
        expected_effect=_stored(expected_effect(call.name, args, config, tool)),
        evidence=tuple(evidence),
        resource_versions={**(file_versions or {}),
                           **(tool.versions(args) if tool is not None else {})},
        roles=verdict.roles,
        approvals_required=max(1, verdict.approvals),
        expires_at=expires_at,
        mandatory=verdict.mandatory, passkey=verdict.passkey,
        decision_id=verdict.decision_id,
        reasons=tuple(r.to_dict() for r in verdict.reasons),
        review_mode=verdict.review_mode,
        review=verdict.review,
        requires=verdict.requires,
        waiter=waiter if context.parent_call else None,
        changes=tuple(changes),
        definition_hash=call.definition_hash,
    )


def summarize(name: str, args: Mapping[str, Any], config: PolicyConfig,
              tool: ToolEntry | None) -> str:
    """One line for approvers, built from the arguments, never from the model's prose."""
    if tool is not None and tool.summary is not None:
        return tool.summary(args)
    spec = config.tools.get(name)
    if spec is not None and spec.shell and isinstance(args.get(spec.shell), str):
        return f"Run shell command: {_short(args[spec.shell])}"
    if spec is not None and spec.paths:
        paths = [args[p] for p in spec.paths if p in args]
        verb = "Write" if spec.writes else "Use"
        rest = {k: v for k, v in args.items() if k not in spec.paths}
        extra = f" ({_pairs(rest)})" if rest else ""
        return f"{verb} {', '.join(_short(p) for p in paths)} with {name}{extra}"
    return f"Call {name}({_pairs(args)})"


def expected_effect(name: str, args: Mapping[str, Any], config: PolicyConfig,
                    tool: ToolEntry | None) -> str:
    """What the call affects, for the approver (every request says it). Declared
    by the tool (``expected_effect=``) or known from the policy's tool semantics; otherwise
    said plainly: whatever this tool does, with these arguments, undeclared."""
    if tool is not None and tool.expected_effect is not None:
        effect = tool.expected_effect
        text = effect if isinstance(effect, str) else effect(args)
        if text and text.strip():
            return text
    spec = config.tools.get(name)
    if spec is not None and spec.shell:
        return "runs a shell command in the workspace"
    if spec is not None and spec.writes:
        paths = [_short(args[p]) for p in spec.paths if p in args]
        return f"creates or overwrites {', '.join(paths) or 'files'}"
    shown = f" with {_pairs(args)}" if args else " (no arguments)"
    return (f"whatever {name} does{shown}: its effects are not declared to signoff "
            "(declare them with the tool's expected_effect)")


def _stored(text: str | None) -> str | None:
    return None if text is None else stored_text(text, SUMMARY_MAX)


def _pairs(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in sorted(args.items()))


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else canonical_text({"v": value})[5:-1]
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= _SUMMARY_VALUE else text[:_SUMMARY_VALUE - 1] + "…"
