"""One coding agent's tool call judged by the gate, whatever the harness's hook format.

A coding agent (Claude Code, Codex CLI, Gemini CLI, the Claude Agent SDK) runs its own
tools; signoff sees a call in a hook before it runs and a result after. ``judge`` turns
the call into an ``Answer`` — allow, deny with a reason for the model, or (``ask_locally``)
ask the harness's own prompt — and each harness's module writes that answer in its
hook's format. ``report`` settles the request an approved call ran under. An approver's
edit is denied (naming the approved arguments), unless the harness can run other
arguments than the model proposed (``runs_edits``: Claude Code's and the Claude Agent
SDK's ``updatedInput``): then the claimed, approved arguments are the answer's to run.

A call the hook allows is run by the harness, not by signoff: the hook claims an
approved request (so one approval lets one run through) and the post-call hook reports
what it returned, but signoff cannot stop the harness from running it twice.

The call id is not the harness's own tool-call id: a retried call gets a new one, and
must join the request its first attempt made. It is derived from the agent, the session,
the tool and the arguments' hash, with a generation number: a request that ran, expired,
was cancelled or invalidated moves the same call on to a fresh one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from signoff.adapters.hooks import claims
from signoff.canonical import args_hash
from signoff.kernel.execution import Execution
from signoff.kernel.outcomes import Outcome, OutcomeKind, Proposal, ProposalKind
from signoff.model import ApprovalRequest, RunContext, ToolCall

# How many finished requests one identical call may pass before the hook stops looking.
_GENERATIONS = 64
# Requests whose call may be asked again under a fresh call id.
_SPENT = {OutcomeKind.EXECUTED, OutcomeKind.FAILED, OutcomeKind.UNKNOWN, OutcomeKind.EXPIRED,
          OutcomeKind.CANCELLED, OutcomeKind.INVALIDATED, OutcomeKind.EXECUTING}
# The call-id prefix of each agent (Claude Code's ``cc-`` came first and stays).
_PREFIX = {"claude-code": "cc"}


class HookGate(Protocol):
    """What judging a hook's call needs of a gate: the kernel's ``Gate``, or a server's
    gate as one authenticated caller may use it (``signoff.adapters.hooks.served``)."""

    def propose(self, call: ToolCall, /, context: RunContext | None = None) -> Proposal: ...

    def outcome(self, request_id: str) -> Outcome: ...

    def wait(self, request_id: str, *, timeout: float) -> Outcome: ...

    def claim(self, request_id: str) -> Execution | Outcome: ...

    def report(self, execution: Execution, *, result: Any = None,
               error: str | None = None) -> Outcome: ...

    def cancel(self, request_id: str, *, actor: str | None, reason: str) -> Outcome: ...

    def get_request(self, request_id: str) -> ApprovalRequest: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class HookOptions:
    agent: str = "claude-code"  # the harness, as the audit names it
    principal: str | None = None  # the OS user the call is made for
    wait_seconds: float = 45.0  # inside Claude Code's default 60 s hook timeout
    ask_locally: bool = False  # hand asks to the harness's own prompt
    inbox_url: str | None = None
    claims_dir: Path | None = None  # where a claim waits for the post-call hook (``claims``)
    # The harness can run the approved arguments in place of the proposed ones (Claude
    # Code's ``updatedInput``): an approver's edit is allowed, as ``Answer.execution``.
    runs_edits: bool = False

    @property
    def claims_at(self) -> Path:
        return self.claims_dir if self.claims_dir is not None \
            else claims.default_dir(self.agent)


@dataclass(frozen=True, slots=True)
class Answer:
    """What the hook tells the harness: run the call, refuse it, or ask its own prompt."""

    kind: Literal["allow", "deny", "ask"]
    reason: str
    request_id: str | None = None
    # The claim an approved call runs under (kept for the post-call hook by ``judge``).
    execution: Execution | None = field(default=None, compare=False)


def deny(reason: str, request_id: str | None = None) -> Answer:
    return Answer("deny", reason, request_id)


def call_id_for(session: str, tool: str, args: Mapping[str, Any], generation: int = 0, *,
                agent: str = "claude-code") -> str:
    """The call id a call gets in its session: the same call, the same id (a retry joins)."""
    digest = hashlib.sha256(json.dumps([session, tool, args_hash(args)]).encode()).hexdigest()
    return f"{_PREFIX.get(agent, agent)}-{digest[:32]}-{generation}"


def context_for(session: str, options: HookOptions) -> RunContext:
    return RunContext(thread_id=session, session_id=session, principal=options.principal)


def judge(gate: HookGate, session: str, tool: str, args: dict[str, Any],
          options: HookOptions) -> Answer:
    """The answer to one call. Anything the gate cannot judge — a gate that fails — is a
    deny: what the gate cannot see, a human decides."""
    try:
        return _judge(gate, session, tool, args, options)
    except Exception as exc:  # an outage denies, never allows
        return deny(f"signoff could not judge this call ({type(exc).__name__}: {exc}); "
                    "it was not allowed")


def _judge(gate: HookGate, session: str, tool: str, args: dict[str, Any],
           options: HookOptions) -> Answer:
    context = context_for(session, options)
    for generation in range(_GENERATIONS):
        call = ToolCall(id=call_id_for(session, tool, args, generation, agent=options.agent),
                        name=tool, args=args)
        proposal = gate.propose(call, context)
        if proposal.kind is ProposalKind.ALLOWED:
            return Answer("allow", proposal.verdict.message)
        if proposal.kind in (ProposalKind.DENIED, ProposalKind.BLOCKED):
            return deny(proposal.verdict.message)
        request = proposal.request
        assert request is not None
        if proposal.kind is ProposalKind.PENDING:
            if options.ask_locally:
                gate.cancel(request.id, actor=options.principal,
                            reason=f"handed to {options.agent}'s own permission prompt")
                return Answer("ask", f"signoff asks: {proposal.verdict.message}", request.id)
            outcome = gate.wait(request.id, timeout=options.wait_seconds)
        else:
            outcome = gate.outcome(request.id)
        if outcome.kind in _SPENT:
            continue  # this request is used up: the same call asks afresh
        return _answer(gate, outcome, request.id, options, session=session, call=call)
    return deny("this call was approved and run too many times in this session; "
                "start a new session")


def _answer(gate: HookGate, outcome: Outcome, request_id: str, options: HookOptions, *,
            session: str, call: ToolCall) -> Answer:
    if outcome.kind is OutcomeKind.APPROVED:
        claimed = gate.claim(request_id)
        if isinstance(claimed, Execution):
            request = gate.get_request(request_id)
            if request.approved_hash is not None and request.approved_hash != request.args_hash:
                if not options.runs_edits or args_hash(claimed.args) != request.approved_hash:
                    gate.report(claimed, error=f"the approver edited the arguments; "
                                f"{options.agent} runs only what the model proposed")
                    return deny(f"request {request_id} was approved with edited arguments: "
                                f"propose exactly these: {json.dumps(claimed.args)}", request_id)
                # The result comes back with the edited arguments: kept under their call id.
                edited = call_id_for(session, call.name, claimed.args,
                                     agent=options.agent).rsplit("-", 1)[0]
                claims.keep(options.claims_at, f"{edited}-{request_id}", claimed)
                return Answer("allow", f"approved in signoff with an approver's edit (request "
                              f"{request_id})", request_id, claimed)
            claims.keep(options.claims_at, call.id or "", claimed)
            return Answer("allow", f"approved in signoff (request {request_id})", request_id,
                          claimed)
        outcome = claimed
    if outcome.kind is OutcomeKind.PENDING:
        where = f" at {options.inbox_url.rstrip('/')}/requests/{request_id}" \
            if options.inbox_url else " (signoff requests approve " + request_id + ")"
        return deny(f"this call needs a human's approval: request {request_id} is waiting"
                    f"{where}. Nobody decided within {options.wait_seconds:g} s; once it is "
                    "approved, make exactly the same call again", request_id)
    if outcome.kind is OutcomeKind.REJECTED:
        alternatives = "; alternatives: " + "; ".join(outcome.alternatives) \
            if outcome.alternatives else ""
        return deny(f"rejected by an approver (request {request_id}): "
                    f"{outcome.reason or 'no reason given'}{alternatives}", request_id)
    if outcome.kind is OutcomeKind.RESPONDED:
        return deny(f"an approver answered instead of running it (request {request_id}): "
                    f"{outcome.message or outcome.reason or ''}", request_id)
    return deny(f"request {request_id} is {outcome.kind.value}"
                f"{': ' + outcome.reason if outcome.reason else ''}; the call was not allowed",
                request_id)


def report(gate: HookGate, session: str, tool: str, args: Mapping[str, Any], *,
           response: Any, failed: bool, options: HookOptions,
           tool_use_id: Any = None) -> str | None:
    """Report a call's result: the request it ran under, claimed by the pre-call hook, is
    settled with it (succeeded / failed); a call allowed outright gets a ``call.result``
    audit event (in-process). The request id reported, if any."""
    digest = hashlib.sha256(json.dumps(response, sort_keys=True, default=str).encode())
    base = call_id_for(session, tool, args, agent=options.agent).rsplit("-", 1)[0]
    execution = claims.take(options.claims_at, base)
    if execution is not None:
        if failed:
            gate.report(execution, error=json.dumps(response, default=str)[:500])
        else:
            gate.report(execution, result={"result_hash": "sha256:" + digest.hexdigest(),
                                           "tool_use_id": tool_use_id})
        return execution.request_id
    note = getattr(gate, "note_call_result", None)
    if note is not None:
        note({"tool": tool, "call_id": call_id_for(session, tool, args, agent=options.agent),
              "thread_id": session, "tool_use_id": tool_use_id, "agent": options.agent,
              "outcome": "error" if failed else "ok",
              "result_hash": "sha256:" + digest.hexdigest()}, actor=options.principal)
    return None
