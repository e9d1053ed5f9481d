"""The shapes of the HTTP API's bodies: one source for validation and ``/openapi.json``.

Request bodies forbid unknown fields (a typo such as ``reson`` is an error,
not a silently empty reason) — except a call's ``context``, which is public
input: trusted keys in it are stripped and reported, unknown ones ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from signoff import inputs
from signoff.decisions import LISTED_MAX
from signoff.errors import InvalidInput
from signoff.kernel.bulk import BULK_MAX
from signoff.shown import PATTERN as SHOWN_HASH
from signoff.shown import shown_hash


def _checked(check: Callable[[str], Any]) -> AfterValidator:
    """A validator by the input contract (``signoff.inputs``): a refusal keeps its code
    (``problems`` turns it into the problem's ``code`` and ``field``)."""

    def validate(value: str) -> str:
        try:
            check(value)
        except InvalidInput as exc:
            raise PydanticCustomError(exc.code, exc.message.replace("{", "{{")
                                      .replace("}", "}}")) from None
        return value

    return AfterValidator(validate)


def _text(limit: int) -> AfterValidator:
    return _checked(lambda v: inputs.text("the value", v, limit))


def _text_schema(limit: int) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "maxLength": limit, "pattern": "^[^\\x00]*$"})


Identifier = Annotated[str, _checked(lambda v: inputs.identifier("the value", v)),
                       WithJsonSchema({"type": "string", "minLength": 1,
                                       "maxLength": inputs.ID_MAX,
                                       "pattern": inputs.ID_PATTERN})]
CredentialId = Annotated[str, _checked(lambda v: inputs.credential_id("the value", v)),
                         WithJsonSchema({"type": "string", "minLength": 1,
                                         "maxLength": inputs.CREDENTIAL_MAX,
                                         "pattern": inputs.CREDENTIAL_PATTERN})]
ToolName = Annotated[str, _checked(lambda v: inputs.tool_name("the value", v)),
                     WithJsonSchema({"type": "string", "minLength": 1,
                                     "maxLength": inputs.TOOL_MAX})]
Index = Annotated[str, _checked(lambda v: inputs.index("the value", v)),
                  WithJsonSchema({"type": "string",
                                  "pattern": f"^[0-9]{{1,{inputs.INDEX_DIGITS}}}$"})]
ArgsHash = Annotated[str, _checked(lambda v: shown_hash("the value", v)),
                    WithJsonSchema({"type": "string", "pattern": SHOWN_HASH})]
Description = Annotated[str, _text(inputs.DESCRIPTION_MAX),
                        _text_schema(inputs.DESCRIPTION_MAX)]
Reason = Annotated[str, _text(inputs.REASON_MAX), _text_schema(inputs.REASON_MAX)]
Message = Annotated[str, _text(inputs.MESSAGE_MAX), _text_schema(inputs.MESSAGE_MAX)]
Alternative = Annotated[str, _text(inputs.ALTERNATIVE_MAX),
                        _text_schema(inputs.ALTERNATIVE_MAX)]
Evidence = Annotated[str, _text(inputs.EVIDENCE_MAX), _text_schema(inputs.EVIDENCE_MAX)]
ErrorText = Annotated[str, _text(inputs.ERROR_MAX), _text_schema(inputs.ERROR_MAX)]
SearchText = Annotated[str, _text(inputs.SEARCH_MAX), _text_schema(inputs.SEARCH_MAX)]
PolicyVersion = Annotated[str, _text(inputs.ID_MAX), _text_schema(inputs.ID_MAX)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CallIn(Strict):
    """A tool call proposed by an agent (any language)."""

    tool: ToolName = Field(description="the tool's name")
    args: dict[str, Any] = Field(default_factory=dict, description="the call's JSON arguments")
    call_id: Identifier = Field(description="the model's id for this call; re-sending it finds "
                                "the same request")
    description: Description | None = Field(None, description="what the agent says the call "
                                             "does (shown as agent-supplied)")
    evidence: list[Evidence] = Field(default_factory=list, max_length=inputs.EVIDENCE_ITEMS)
    context: dict[str, Any] = Field(default_factory=dict,
                                    description="thread_id, run_id, session_id, intent; "
                                    "trusted keys are stripped")


class CheckIn(Strict):
    tool: ToolName
    args: dict[str, Any] = Field(default_factory=dict)
    call_id: Identifier = "check"
    context: dict[str, Any] = Field(default_factory=dict)


class ListedCall(Strict):
    """One call an approver was shown (an auto-approve card, a bulk confirmation): its
    request id and the arguments hash shown."""

    request_id: Identifier
    args_hash: str = Field(max_length=100, description="sha256:<hex>, as it was shown")


class BulkCall(ListedCall):
    """One call a bulk confirmation listed; a malformed hash is ``invalid_args_hash``, as
    ``Gate.approve_many`` says it."""

    args_hash: ArgsHash = Field(description="sha256:<hex>, as it was shown")


class BulkDecisionIn(Strict):
    """Approve once each call listed, as the confirmation showed it (docs/insights.md)."""

    kind: Literal["approve"] = Field("approve", description="only approvals go in bulk")
    # At most BULK_MAX, counted by the kernel (``too_many_listed``, as ``Gate.approve_many``
    # says it); the body's cap bounds what is parsed before.
    calls: list[BulkCall] = Field(
        json_schema_extra={"maxItems": BULK_MAX},
        description="the calls the confirmation listed, each with the arguments hash it "
        f"showed; all of one shape (tool, argument names, commands); at most {BULK_MAX}")


class DecisionIn(Strict):
    """What an approver says. The approver is never a field: it is whoever is signed in."""

    kind: Literal["approve", "reject", "edit", "respond"]
    scope: Literal["once", "thread", "auto_thread"] = Field(
        "once", description="approve: once; for this thread (a grant for this tool and "
        "arguments); or auto_thread (the thread switches to auto and the pause's other "
        "undecided calls are approved too)")
    assertion: dict[str, Any] | None = Field(
        None, description="approve or edit a request that needs a passkey: the WebAuthn "
        "assertion (PublicKeyCredential JSON) over the challenge of "
        "POST /requests/{id}/passkey-options")
    reason: Reason | None = None
    alternatives: list[Alternative] = Field(default_factory=list,
                                            max_length=inputs.ALTERNATIVES_MAX)
    args: dict[str, Any] | None = Field(None, description="the edited arguments (kind=edit)")
    message: Message | None = Field(None, description="the answer (kind=respond)")
    expected_args_hash: ArgsHash | None = Field(
        None, description="the arguments hash the approver was shown: the decision applies "
        "only while it is the hash that would run (else 409 args_changed, with the "
        "arguments and hash that would run now)")
    listed: list[ListedCall] = Field(
        default_factory=list, max_length=LISTED_MAX,
        description="auto_thread: the other calls of the pause the approver was shown; only "
        "these, still pending with the hash given, are approved too (none: this request "
        "alone)")


class ThreadIn(Strict):
    review_mode: Literal["manual", "auto", "full"]


class CancelIn(Strict):
    """Why the request is withdrawn; the waiting agent reads it."""

    reason: Reason = Field(min_length=1)
    # Only while it is still pending: an approval that arrived first stands (409
    # already_decided). What an agent that gave up waiting sends (``Gate.cancel``).
    pending_only: bool = False


class ResultIn(Strict):
    fencing_token: int = Field(ge=0, le=2**53 - 1)
    result: Any = None
    error: ErrorText | None = None


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
    expected_effect: str | None = Field(None, description="what the call affects")
    description: str | None = None
    review: dict[str, Any] | None = Field(
        None, description="the auto reviewer's answer that sent the call to a human")
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
    requires: list[list[str | int]] = Field(
        default_factory=list, description="dual control: [role, approvals] pairs, every one "
        "needed, each approver counted once (empty: any of `roles`)")
    passkey: bool = Field(False, description="approvals need the approver's passkey: approve "
                          "and edit carry an `assertion` (docs/signatures.md)")
    approved_args: dict[str, Any] | None = Field(
        None, description="the arguments an approver's edit put in place of `args`")
    approved_args_canonical: str | None = None
    approved_hash: str | None = None
    outcome_code: str | None = None
    outcome_reason: str | None = None


class DecisionOut(BaseModel):
    kind: str
    scope: str = "once"
    approver: str
    args_hash: str | None = None
    reason: str | None = None
    at: float


class Change(BaseModel):
    """What a proposed write changes in one file (write evidence, docs/workspace.md). The
    diff is text, from files and the model's arguments: show it escaped, never as HTML."""

    path: str = Field(description="the path as the call names it")
    resolved: str | None = Field(None, description="where it resolves (none: unplaceable)")
    kind: Literal["diff", "new", "binary", "too_large", "secret", "unreadable", "edit_failed",
                  "shell_write", "write", "outside", "omitted"]
    diff: str | None = Field(None, description="a unified diff, current → new (diff, new); "
                             "its last line says how many more lines were not shown")
    truncated: bool = False
    lines: int | None = Field(None, description="lines in the whole diff")
    size: int | None = Field(None, description="bytes of the file at proposal")
    sha256: str | None = Field(None, description="SHA-256 of the file at proposal")
    exists: bool | None = Field(None, description="the file existed at proposal")
    new_size: int | None = None
    new_sha256: str | None = None
    edited: bool = Field(False, description="computed for an approver's edited arguments")
    note: str | None = None


class RequestDetail(Request):
    decisions: list[DecisionOut]
    approvals: int
    changes: list[Change] = Field(
        default_factory=list, description="write evidence: per file the call writes, what "
        "changes (bound as resource versions: a file changed since refuses the run with "
        "resource_changed)")


class RequestList(BaseModel):
    requests: list[Request]
    next_cursor: str | None = Field(None, description="pass as ?cursor= for the next page "
                                    "(older requests); null on the last page")


class DecisionResult(BaseModel):
    request_id: str
    status: str
    decision_id: str
    approvals: int
    required: int
    transitioned: bool
    replayed: bool
    review_mode: str | None = Field(None, description="auto_thread: the thread's mode now")
    also_approved: list[str] = Field(default_factory=list,
                                     description="auto_thread: the pause's other requests "
                                     "approved by this decision")


class BulkRefused(BaseModel):
    request_id: str
    code: str = Field(description="why it was not approved: mandatory, passkey_required, "
                      "args_changed, not_found, self_approval, role_missing, expired, "
                      "already_decided, already_voted, …")
    message: str


class ShapeParts(BaseModel):
    tool: str
    keys: list[str] = Field(description="the argument names")
    commands: list[str] = Field(description="a shell tool's command models, in order")


class BulkDecision(DecisionResult):
    request: Request = Field(description="the request as this decision left it")


class BulkDecisionResult(BaseModel):
    shape: str | None = Field(description="what the approved calls share")
    shape_parts: ShapeParts | None = Field(description="the shape's parts (null: none chosen)")
    approved: list[str] = Field(description="now approved")
    recorded: list[str] = Field(description="this vote counted; more approvals are needed")
    decisions: list[BulkDecision] = Field(description="each decision, as one-by-one, with "
                                          "its request")
    refused: list[BulkRefused] = Field(description="listed, not approved, and why")


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
    receipt: str | None = Field(None, description="the approval's signed receipt (a compact "
                                "JWS; docs/signatures.md), or null: signed by no key")


class ReceiptOut(BaseModel):
    request_id: str
    receipt: str = Field(description="a compact JWS, typ signoff-receipt+jws; verify it with "
                         "/.well-known/jwks.json (signoff.receipts.verify)")
    kid: str = Field(description="the key that signed it")
    payload: dict[str, Any] = Field(description="what it says, as signed (unverified here)")


class Jwks(BaseModel):
    keys: list[dict[str, Any]] = Field(description="every public key signoff signed with on "
                                       "this database, rotated ones included (RFC 7517)")


class Thread(BaseModel):
    thread_id: str
    review_mode: str
    set_by: str | None = Field(None, description="who set the stored mode")
    setter_calls_mode: str | None = Field(
        None, description="the mode that applies to the calls of `set_by` themselves, when "
        "it is not `review_mode` (nobody lowers the review of their own calls)")
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


class InsightCount(BaseModel):
    key: str = Field(description="a tool, a thread, a status or a UTC day")
    asks: int


class InsightDay(BaseModel):
    day: str = Field(description="a UTC date, 2026-03-01")
    asks: int
    tools: list[InsightCount]


class InsightThread(BaseModel):
    thread: str
    asks: int
    days: list[InsightCount] = Field(description="its asks per UTC day")


class InsightRule(BaseModel):
    rule: str = Field(description="a rule id, or the step that asked in parentheses: "
                      "(gated), (unknown_tool), (shell)…")
    asks: int
    decided: int
    approved: int
    edited: int
    rejected: int
    responded: int
    approve_rate: float | None = Field(description="a share of `decided`; null when "
                                       "nothing was decided")
    edit_rate: float | None
    reject_rate: float | None
    respond_rate: float | None


class InsightWait(BaseModel):
    risk: str
    decided: int
    median: float = Field(description="seconds from the ask to its decision (nearest rank)")
    p90: float


class InsightRepeat(BaseModel):
    tool: str
    args_hash: str
    asks: int


class Insights(BaseModel):
    """``Insights.to_dict()``: the figures of docs/insights.md."""

    since: float | None
    until: float | None
    asks: int
    threads: int
    statuses: list[InsightCount]
    tools: list[InsightCount]
    rules: list[InsightRule]
    top_threads: list[InsightThread]
    days: list[InsightDay]
    waits: list[InsightWait]
    repeated: list[InsightRepeat]
    never_matched: list[str]
    expired_unanswered: int
    expired_by_tool: list[InsightCount]

class Health(BaseModel):
    status: Literal["ok"]
    backend: str
    version: str
    policy: str  # the policy file the server judges calls with
    policy_version: str
