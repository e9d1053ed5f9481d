"""Claude Code's ``PreToolUse`` hook answered by the gate, and its ``PostToolUse`` reported.

Claude Code runs the hook command with the event as JSON on stdin (``session_id``,
``cwd``, ``hook_event_name``, ``tool_name``, ``tool_input``, ``tool_use_id``) and reads
``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
"allow" | "deny" | "ask", "permissionDecisionReason": …}}`` from stdout.

A call the hook allows is run by Claude Code, not by signoff: the hook claims an
approved request (so one approval lets one run through) and ``PostToolUse`` reports what
it returned, but signoff cannot stop Claude Code from running it twice.

The call id is not Claude Code's ``tool_use_id``: a retried call gets a new one, and must
join the request its first attempt made. It is derived from the session, the tool and
the arguments' hash, with a generation number: a request that ran, expired, was
cancelled or invalidated moves the same call on to a fresh one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signoff.adapters.claude_code import claims
from signoff.canonical import args_hash, parse_args
from signoff.kernel.execution import Execution
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.kernel.protocol import GateProtocol
from signoff.model import RunContext, ToolCall

AGENT = "claude-code"
# How many finished requests one identical call may pass before the hook stops looking.
_GENERATIONS = 64
# Requests whose call may be asked again under a fresh call id.
_SPENT = {OutcomeKind.EXECUTED, OutcomeKind.FAILED, OutcomeKind.UNKNOWN, OutcomeKind.EXPIRED,
          OutcomeKind.CANCELLED, OutcomeKind.INVALIDATED, OutcomeKind.EXECUTING}


@dataclass(frozen=True, slots=True, kw_only=True)
class HookOptions:
    principal: str | None = None  # the OS user the call is made for
    wait_seconds: float = 45.0  # inside Claude Code's default 60 s hook timeout
    ask_locally: bool = False  # hand asks to Claude Code's own prompt
    inbox_url: str | None = None
    # where a claim waits for the PostToolUse hook (``claims``)
    claims_dir: Path = field(default_factory=claims.default_dir)


def decision(kind: str, reason: str) -> dict[str, Any]:
    """The ``PreToolUse`` answer Claude Code reads."""
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": kind,
                                   "permissionDecisionReason": reason}}


def deny(reason: str) -> dict[str, Any]:
    return decision("deny", reason)


def call_id_for(session: str, tool: str, args: Mapping[str, Any], generation: int = 0) -> str:
    """The call id a call gets in its session: the same call, the same id (a retry joins)."""
    digest = hashlib.sha256(json.dumps([session, tool, args_hash(args)]).encode()).hexdigest()
    return f"cc-{digest[:32]}-{generation}"


def read_event(text: str | bytes, *expected: str
               ) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """(session, tool, tool input, event) of one of the ``expected`` events: ``ValueError``
    for anything else."""
    event = json.loads(text)
    if not isinstance(event, dict):
        raise ValueError("the hook input is not a JSON object")
    name = event.get("hook_event_name")
    if name not in expected:
        raise ValueError(f"expected a {' or '.join(expected)} event, got {name!r}")
    session, tool, given = event.get("session_id"), event.get("tool_name"), event.get("tool_input")
    if not isinstance(session, str) or not session:
        raise ValueError("the hook input has no session_id")
    if not isinstance(tool, str) or not tool:
        raise ValueError("the hook input has no tool_name")
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ValueError("tool_input is not a JSON object")
    return session, tool, parse_args(given), event


def _context(session: str, options: HookOptions) -> RunContext:
    return RunContext(thread_id=session, session_id=session, principal=options.principal)


def pre_tool_use(gate: GateProtocol, text: str | bytes, options: HookOptions) -> dict[str, Any]:
    """The answer to one ``PreToolUse`` event. Anything the gate cannot judge — bad input,
    a gate that fails — is a deny: what the gate cannot see, a human decides."""
    try:
        session, tool, args, _ = read_event(text, "PreToolUse")
    except Exception as exc:  # fail closed on any bad input
        return deny(f"signoff could not read the hook input ({exc}); the call was not allowed")
    try:
        return _judge(gate, session, tool, args, options)
    except Exception as exc:  # an outage denies, never allows
        return deny(f"signoff could not judge this call ({type(exc).__name__}: {exc}); "
                    "it was not allowed")


def _judge(gate: GateProtocol, session: str, tool: str, args: dict[str, Any],
           options: HookOptions) -> dict[str, Any]:
    context = _context(session, options)
    for generation in range(_GENERATIONS):
        call = ToolCall(id=call_id_for(session, tool, args, generation), name=tool, args=args)
        proposal = gate.propose(call, context)
        if proposal.kind is ProposalKind.ALLOWED:
            return decision("allow", proposal.verdict.message)
        if proposal.kind in (ProposalKind.DENIED, ProposalKind.BLOCKED):
            return deny(proposal.verdict.message)
        request = proposal.request
        assert request is not None
        if proposal.kind is ProposalKind.PENDING:
            if options.ask_locally:
                gate.cancel(request.id, actor=options.principal,
                            reason="handed to Claude Code's own permission prompt")
                return decision("ask", f"signoff asks: {proposal.verdict.message}")
            outcome = gate.wait(request.id, timeout=options.wait_seconds)
        else:
            outcome = gate.outcome(request.id)
        if outcome.kind in _SPENT:
            continue  # this request is used up: the same call asks afresh
        return _answer(gate, outcome, request.id, call.id or "", options)
    return deny("this call was approved and run too many times in this session; "
                "start a new session")


def _answer(gate: GateProtocol, outcome: Outcome, request_id: str, call_id: str,
            options: HookOptions) -> dict[str, Any]:
    if outcome.kind is OutcomeKind.APPROVED:
        claimed = gate.claim(request_id)
        if isinstance(claimed, Execution):
            request = gate.get_request(request_id)
            if request.approved_hash is not None and request.approved_hash != request.args_hash:
                gate.report(claimed, error="the approver edited the arguments; Claude Code "
                            "runs only what the model proposed")
                return deny(f"request {request_id} was approved with edited arguments: "
                            f"propose exactly these: {json.dumps(claimed.args)}")
            claims.keep(options.claims_dir, call_id, claimed)
            return decision("allow", f"approved in signoff (request {request_id})")
        outcome = claimed
    if outcome.kind is OutcomeKind.PENDING:
        where = f" at {options.inbox_url.rstrip('/')}/requests/{request_id}" \
            if options.inbox_url else " (signoff requests approve " + request_id + ")"
        return deny(f"this call needs a human's approval: request {request_id} is waiting"
                    f"{where}. Nobody decided within {options.wait_seconds:g} s; once it is "
                    "approved, make exactly the same call again")
    if outcome.kind is OutcomeKind.REJECTED:
        alternatives = "; alternatives: " + "; ".join(outcome.alternatives) \
            if outcome.alternatives else ""
        return deny(f"rejected by an approver (request {request_id}): "
                    f"{outcome.reason or 'no reason given'}{alternatives}")
    if outcome.kind is OutcomeKind.RESPONDED:
        return deny(f"an approver answered instead of running it (request {request_id}): "
                    f"{outcome.message or outcome.reason or ''}")
    return deny(f"request {request_id} is {outcome.kind.value}"
                f"{': ' + outcome.reason if outcome.reason else ''}; the call was not allowed")


def post_tool_use(gate: GateProtocol, text: str | bytes, options: HookOptions) -> str | None:
    """Report a ``PostToolUse`` result (``PostToolUseFailure``: a failure): the request
    it ran under, claimed by the PreToolUse hook, is settled with it (succeeded / failed);
    a call allowed outright gets a ``call.result`` audit event (in-process). The request
    id reported, if any."""
    session, tool, args, event = read_event(text, "PostToolUse", "PostToolUseFailure")
    response = event.get("tool_response", event.get("error"))
    failed = event["hook_event_name"] == "PostToolUseFailure" or (isinstance(
        response, dict) and (response.get("is_error") is True or response.get("isError") is True))
    digest = hashlib.sha256(json.dumps(response, sort_keys=True, default=str).encode())
    base = call_id_for(session, tool, args).rsplit("-", 1)[0]
    execution = claims.take(options.claims_dir, base)
    if execution is not None:
        summary = {"result_hash": "sha256:" + digest.hexdigest(),
                   "tool_use_id": event.get("tool_use_id")}
        if failed:
            gate.report(execution, error=_text(response))
        else:
            gate.report(execution, result=summary)
        return execution.request_id
    note = getattr(gate, "note_call_result", None)
    if note is not None:
        note({"tool": tool, "call_id": call_id_for(session, tool, args), "thread_id": session,
              "tool_use_id": event.get("tool_use_id"), "agent": AGENT,
              "outcome": "error" if failed else "ok",
              "result_hash": "sha256:" + digest.hexdigest()}, actor=options.principal)
    return None


def _text(response: Any) -> str:
    return json.dumps(response, default=str)[:500]
