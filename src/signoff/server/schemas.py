"""The shapes of the HTTP API's bodies: one source for validation and ``/openapi.json``.

Request bodies forbid unknown fields (a typo such as ``reson`` is an error,
not a silently empty reason) — except a call's ``context``, which is public
input: trusted keys in it are stripped and reported, unknown ones ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Name = Field(min_length=1, max_length=200)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CallIn(Strict):
    """A tool call proposed by an agent (any language)."""

    tool: str = Field(min_length=1, max_length=200, description="the tool's name")
    args: dict[str, Any] = Field(default_factory=dict, description="the call's JSON arguments")
    call_id: str = Field(min_length=1, max_length=200,
                         description="the model's id for this call; re-sending it finds the "
                         "same request")
    description: str | None = Field(None, max_length=10_000,
                                    description="what the agent says the call does "
                                    "(shown as agent-supplied)")
    evidence: list[str] = Field(default_factory=list, max_length=50)
    context: dict[str, Any] = Field(default_factory=dict,
                                    description="thread_id, run_id, session_id, intent; "
                                    "trusted keys are stripped")


class CheckIn(Strict):
    tool: str = Field(min_length=1, max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)
    call_id: str = Field("check", min_length=1, max_length=200)
    context: dict[str, Any] = Field(default_factory=dict)


class DecisionIn(Strict):
    """What an approver says. The approver is never a field: it is whoever is signed in."""

    kind: Literal["approve", "reject", "edit", "respond"]
    scope: Literal["once", "thread"] = "once"
    reason: str | None = Field(None, max_length=10_000)
    alternatives: list[str] = Field(default_factory=list, max_length=20)
    args: dict[str, Any] | None = Field(None, description="the edited arguments (kind=edit)")
    message: str | None = Field(None, max_length=10_000, description="the answer (kind=respond)")


class ThreadIn(Strict):
    review_mode: Literal["manual", "auto", "full"]


class CancelIn(Strict):
    """Why the request is withdrawn; the waiting agent reads it."""

    reason: str = Field(min_length=1, max_length=10_000)


class ResultIn(Strict):
    fencing_token: int = Field(ge=0, le=2**53 - 1)
    result: Any = None
    error: str | None = Field(None, max_length=100_000)


class Verdict(BaseModel):
    effect: Literal["allow", "ask", "deny", "blocked"]
    code: str
    message: str
    reasons: list[dict[str, Any]]
    risk: str
    policy_version: str
    args_hash: str | None = None
    review_mode: str
    roles: list[str]
    approvals: int


class Request(BaseModel):
    id: str
    call_id: str
    tool: str
    args: dict[str, Any] = Field(description="the proposed arguments")
    args_canonical: str = Field(description="their canonical JSON (RFC 8785): the bytes "
                                "`args_hash` is the hash of")
    args_hash: str
    status: str
    risk: str
    summary: str
    description: str | None = None
    thread_id: str | None = None
    run_id: str | None = None
    principal: str | None = Field(None, description="on whose behalf the call was asked "
                                  "(over HTTP: the proposing identity)")
    agent: str | None = Field(None, description="the agent identity of the gate that asked")
    policy_version: str
    created_at: float
    expires_at: float | None = None
    roles: list[str]
    approvals_required: int
    approved_args: dict[str, Any] | None = Field(
        None, description="the arguments an approver's edit put in place of `args`")
    approved_args_canonical: str | None = None
    approved_hash: str | None = None
    outcome_code: str | None = None
    outcome_reason: str | None = None


class DecisionOut(BaseModel):
    kind: str
    approver: str
    args_hash: str | None = None
    reason: str | None = None
    at: float


class RequestDetail(Request):
    decisions: list[DecisionOut]
    approvals: int


class RequestList(BaseModel):
    requests: list[Request]


class DecisionResult(BaseModel):
    request_id: str
    status: str
    decision_id: str
    approvals: int
    required: int
    transitioned: bool
    replayed: bool


class Outcome(BaseModel):
    kind: str
    request_id: str | None = None
    result: Any = None
    error: str | None = None
    code: str | None = None
    reason: str | None = None
    alternatives: list[str]
    message: str | None = None
    args: dict[str, Any]


class CallOut(BaseModel):
    status: Literal["allowed", "denied", "blocked", "pending", "decided"]
    request_id: str | None = None
    verdict: Verdict
    stripped: list[str] = Field(description="trusted context keys removed from the input")
    wait_url: str | None = None


class Claim(BaseModel):
    request_id: str
    fencing_token: int
    args: dict[str, Any] = Field(description="exactly the approved arguments: run these")
    lease_until: float | None = None


class Thread(BaseModel):
    thread_id: str
    review_mode: str
    stored: bool
    ceiling: str
    allowed_modes: list[str]
    pending: list[Request]
    running: bool


class AuditEvent(BaseModel):
    index: int
    at_us: int
    kind: str
    request_id: str | None = None
    actor: str | None = None
    data: Any = None
    prev_hash: str
    hash: str


class AuditPage(BaseModel):
    events: list[AuditEvent]
    head_index: int
    head_hash: str
    verified: bool | None = None
    first_bad: int | None = None


class Health(BaseModel):
    status: Literal["ok"]
    backend: str
    version: str
    policy: str  # the policy file the server judges calls with
    policy_version: str
