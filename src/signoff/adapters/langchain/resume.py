"""Taking a decision a LangGraph resume value carries (the opt-in
``SignoffMiddleware(resume_decisions_as=<user>)``): read in LangChain's HITL shape
(``langchain.hitl``), taken as that user's through the gate's rules for the one request the
interrupt stands for, once per delivery (``Gate.decide_once``), audited ``via: resume``.
What is refused or not a decision is said in the next pause, never raised into the run.

A decision applies only to the arguments its interrupt showed: the hash of what would run
when the interrupt was raised is recorded then (``note_shown``, keyed like the delivery),
and the decision carries it as ``expected_args_hash`` — an approver's edit since is refused
(``args_changed``) and the next pause shows what would run now."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langgraph.config import get_config

from signoff import inputs
from signoff.adapters.langchain.hitl import resume_decision
from signoff.errors import ConfigurationError, InvalidDecision, NotFound, SignoffError
from signoff.identity import IdentityKind
from signoff.kernel.gate import Gate
from signoff.kernel.protocol import GateProtocol
from signoff.model import DecisionKind, RequestStatus

log = logging.getLogger("signoff.adapters.langchain")


def take_resumed(gate: Gate, user: str, request_id: str, call: Mapping[str, Any], *,
                 tool: Any, value: Any, delivery: int) -> str | None:
    """Take the decision ``value`` carries for this call's request, once per delivery
    (the key is this interrupt's place: a node re-run replays the same value, which is
    not judged again). Returns the note the next pause shows when nothing was taken."""
    read = resume_decision(value, str(call["name"]))
    if read.decision is None:
        if read.why is None:
            return None  # a wake-up
        log.info("signoff: the resume value for request %s is only a wake-up: %s",
                 request_id, read.why)
        return f"A resume value was not taken as a decision: {read.why}."
    key = _key("resume", request_id, delivery)
    decision = replace(read.decision, expected_args_hash=read.args_hash
                       or _shown(gate, request_id, delivery))

    def schema_check() -> None:
        if read.refusal is not None:
            raise read.refusal
        if decision.kind is DecisionKind.EDIT:
            check_tool_args(tool, decision.args)

    once = gate.decide_once(request_id, decision, user=user,
                                 key=key, via="resume", precheck=schema_check)
    if not once.refused:
        if not once.replayed:
            log.info("signoff: %s's %s of request %s arrived by resume",
                     user, decision.kind.value, request_id)
        taken = once.result
        if taken is not None and not taken.transitioned \
                and taken.request.status is RequestStatus.PENDING:
            return (f"The {read.kind} given by resume as {user} was "
                    f"taken: {taken.approvals} of {taken.required} approvals; the call "
                    "waits for the others.")
        return None
    if not once.replayed:
        log.warning("signoff: %s's %s of request %s by resume was refused (%s): %s",
                    user, decision.kind.value, request_id, once.code,
                    once.message)
    return (f"The {read.kind} given by resume as {user} was refused "
            f"({once.code}): {once.message}")


def _key(prefix: str, request_id: str, delivery: int) -> str:
    """This interrupt's place: the checkpoint namespace, the delivery, the request."""
    namespace = str((get_config().get("configurable") or {}).get("checkpoint_ns") or "")
    return f"{prefix}-" + hashlib.sha256(
        f"{namespace}\x00{delivery}\x00{request_id}".encode()).hexdigest()[:40]


def note_shown(gate: Gate, request_id: str, delivery: int, args_hash: str) -> None:
    """Record the arguments hash the interrupt being raised shows, the first time it is
    raised (a pause raised again shows what it showed first: a decision on it is refused
    if what would run moved, never taken for other arguments)."""
    key = _key("shown", request_id, delivery)
    try:
        gate.note_shown(key, request_id=request_id, args_hash=args_hash)
    except SignoffError:  # unrecorded: the decision falls back to the proposed arguments
        log.warning("signoff: could not record what the pause of %s showed", request_id,
                    exc_info=True)


def _shown(gate: Gate, request_id: str, delivery: int) -> str:
    """The hash the interrupt of ``delivery`` showed: as recorded when it was raised, else
    (a pause raised before this was recorded) the proposed arguments' hash, what pauses
    showed then."""
    stored, request = gate.shown(_key("shown", request_id, delivery), request_id)
    if stored is not None:
        return stored
    if request is None:
        raise NotFound(f"no approval request {request_id!r}", code="not_found")
    return request.args_hash


def resume_identity(gate: GateProtocol, name: str | None) -> str | None:
    """The opt-in's user name, checked now as far as it can be (the store is asked again at
    every decision): never the agent's own identity, never an agent. Only an in-process
    gate takes decisions this way: over HTTP, approvers decide through the API."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise ConfigurationError("resume_decisions_as names a signoff user (a str): it is "
                                 "read from the store at each decision",
                                 code="invalid_resume_identity")
    inputs.identifier("resume_decisions_as", name)
    if not isinstance(gate, Gate):
        raise ConfigurationError("resume_decisions_as takes decisions through an in-process "
                                 "Gate; with a remote gate, approvers decide through the "
                                 "server's API", code="resume_needs_local_gate")
    if name == gate.agent:
        raise ConfigurationError(f"{name} is the agent's own identity: it never decides",
                                 code="agent_cannot_decide")
    found = gate.identity_of(name)
    if found is not None and found.kind is IdentityKind.AGENT:
        raise ConfigurationError(f"{name} is an agent identity: it never decides",
                                 code="agent_cannot_decide")
    return name


def check_tool_args(tool: Any, args: Any) -> None:
    """An edit's arguments against the tool's own argument schema (the one the model sees),
    where it has a Pydantic one: an edit the tool would refuse is refused before it counts."""
    schema = getattr(tool, "tool_call_schema", None) if tool is not None else None
    validate = getattr(schema, "model_validate", None)
    if not callable(validate) or not isinstance(args, Mapping):
        return
    try:
        validate(dict(args))
    except Exception as exc:  # pydantic's ValidationError: the tool's schema says no
        first = str(exc).splitlines()
        raise InvalidDecision(f"the edited arguments do not fit the tool {tool.name!r}: "
                              f"{' '.join(first[:3])}", code="invalid_edit") from None
