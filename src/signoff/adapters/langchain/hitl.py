"""LangChain's human-in-the-loop protocol on signoff's pauses, so that front-ends built for
``langchain.agents.middleware.human_in_the_loop`` (LangGraph's Agent Chat UI and Agent
Inbox, WebUIs that answer with ``{"decisions": [...]}``) work unchanged.

Every pause's interrupt value is one dict that is at once:

* signoff's own ``{"signoff": {...}}`` (request id, call id, …: what the helpers read);
* a ``ToolApprovalRequest`` (``type = "tool_approval"``, ``tool_call_id``, ``name``,
  ``args``, ``description``): LangChain's per-call interrupt;
* a one-call ``HITLRequest`` (``action_requests``, ``review_configs`` with the allowed
  decisions and, where the tool has one, its argument schema): LangChain's batched
  interrupt, for one call — signoff pauses once per call, each its own interrupt;
* LangGraph's legacy ``HumanInterrupt`` (``action_request``, ``config``, ``description``),
  which older Agent Inbox and Agent Chat UI versions look for.

A resume value is read as a decision (``resume_decision``) only when the middleware was
built with ``resume_decisions_as=<user>``; otherwise it is a wake-up and nothing else.
Accepted shapes, for the one call the interrupt stands for: ``{"decisions": [d]}``
(``HITLResponse``, exactly one decision), ``d`` itself (the per-call answer), and the
legacy Agent Inbox list ``[{"type": "accept"|"edit"|"response"|"ignore", "args": …}]``
(exactly one item). LangGraph unpacks a ``{interrupt_id: value}`` map itself: each call
gets only the value keyed by its own interrupt. Anything else is a wake-up.

A decision applies to the arguments its interrupt showed: the pause shows the arguments
that would run and their ``args_hash``, and the resume's decision is bound to that hash
(the one the decision item carries as ``args_hash``, else the one recorded when the
interrupt was raised: ``signoff.adapters.langchain.resume``).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.types import interrupt

from signoff.errors import InvalidDecision, SignoffError
from signoff.model import ApprovalRequest, Decision
from signoff.shown import shown_hash

DECISIONS = ("approve", "edit", "reject", "respond")
LEGACY_CONFIG = {"allow_accept": True, "allow_edit": True, "allow_respond": True,
                 "allow_ignore": True}
DEFAULT_REJECTION = "The reviewer rejected this call."
IGNORED = "The reviewer dismissed this call (Agent Inbox: ignore)."
WAKE_ONLY = ("Decide in signoff (inbox, CLI or API); a resume only wakes the run, it does not "
             "carry a decision here.")

# LangGraph 1.2 publishes a resume's JSON schema to clients (``interrupt(response_schema=)``);
# a dict is shown, never enforced, so a wake-up without decisions is still accepted.
_SCHEMA_PARAM = "response_schema" in inspect.signature(interrupt).parameters


def response_schema(name: str, args_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The JSON schema of a per-call answer: one of LangChain's four decisions, an edit
    keeping the tool's name (and, shown, its argument schema)."""
    args = dict(args_schema) if args_schema else {"type": "object"}
    return {"title": "Decision", "oneOf": [
        {"type": "object", "title": "ApproveDecision", "required": ["type"],
         "properties": {"type": {"const": "approve"}}},
        {"type": "object", "title": "EditDecision", "required": ["type", "edited_action"],
         "properties": {"type": {"const": "edit"}, "edited_action": {
             "type": "object", "required": ["name", "args"],
             "properties": {"name": {"const": name}, "args": args}}}},
        {"type": "object", "title": "RejectDecision", "required": ["type"],
         "properties": {"type": {"const": "reject"}, "message": {"type": "string"}}},
        {"type": "object", "title": "RespondDecision", "required": ["type", "message"],
         "properties": {"type": {"const": "respond"}, "message": {"type": "string"}}},
    ]}


def pause(value: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """LangGraph's ``interrupt`` with the answer's schema where this LangGraph shows one."""
    if schema is not None and _SCHEMA_PARAM:
        return interrupt(value, response_schema=schema)
    return interrupt(value)


def args_schema_of(tool: Any) -> dict[str, Any] | None:
    """The JSON schema of the arguments the model sees for ``tool`` (its
    ``tool_call_schema``), or ``None``."""
    if tool is None:
        return None
    try:
        schema = getattr(tool, "tool_call_schema", None)
        if isinstance(schema, dict):
            return dict(schema)
        json_schema = getattr(schema, "model_json_schema", None)
        if callable(json_schema):
            shown = json_schema()
            return shown if isinstance(shown, dict) else None
    except Exception:  # a schema that cannot be shown is not shown
        return None
    return None


def hitl_shapes(request: ApprovalRequest, call_id: str, *, note: str | None,
                decisions_by_resume: bool, args_schema: Mapping[str, Any] | None
                ) -> dict[str, Any]:
    """The ``ToolApprovalRequest`` and one-call ``HITLRequest`` fields of a pause: the
    arguments that would run (an approver's edit included) and their hash, which a resume's
    decision is bound to."""
    args = json.loads(request.run_args)
    lines = [request.summary, f"Risk: {request.risk.value}. Signoff request {request.id}."]
    if note:
        lines.append(note)
    if not decisions_by_resume:
        lines.append(WAKE_ONLY)
    description = "\n\n".join(line for line in lines if line)
    review: dict[str, Any] = {"action_name": request.tool, "allowed_decisions": list(DECISIONS)}
    if args_schema:
        review["args_schema"] = dict(args_schema)
    return {"type": "tool_approval", "tool_call_id": call_id, "name": request.tool,
            "args": args, "args_hash": request.run_hash, "description": description,
            "action_requests": [{"name": request.tool, "args": args,
                                 "args_hash": request.run_hash,
                                 "description": description}],
            "review_configs": [review],
            # LangGraph's legacy ``HumanInterrupt`` (older Agent Inbox and Agent Chat UI)
            "action_request": {"action": request.tool, "args": args},
            "config": dict(LEGACY_CONFIG)}


@dataclass(frozen=True, slots=True)
class Read:
    """A resume value as read for one call: a decision, or why it is only a wake-up
    (``None``: a plain wake-up, nothing to say)."""

    decision: Decision | None
    kind: str | None = None  # the protocol's decision type as sent
    why: str | None = None  # set when the value looked like a decision and was not taken
    code: str | None = None
    refusal: InvalidDecision | None = None  # a decision read, refused as given (recorded)
    args_hash: str | None = None  # the arguments hash the decision says it was made on


def resume_decision(value: Any, tool: str) -> Read:
    """The decision a resume value carries for the call of ``tool`` (see the module)."""
    item, why = _one_item(value)
    if item is None:
        return Read(None, why=why, code="malformed_resume" if why else None)
    kind = item.get("type")
    try:
        read = _decision(item, kind, tool)
        if read.decision is None or item.get("args_hash") is None:
            return read
        return Read(read.decision, kind=read.kind, refusal=read.refusal,
                    args_hash=shown_hash("args_hash", item.get("args_hash")))
    except SignoffError as exc:  # over-long text and the like: the input contract
        return Read(None, kind=str(kind), why=exc.message, code=exc.code)


def _decision(item: Mapping[str, Any], kind: Any, tool: str) -> Read:
    if kind in ("approve", "accept"):  # Agent Inbox's accept: the call as shown
        return Read(Decision.approve(), kind="approve")
    if kind == "edit":
        if "edited_action" in item:
            return _edit(item["edited_action"], tool, kind="edit")
        return _edit(item.get("args"), tool, kind="edit")
    if kind == "reject":
        message = item.get("message")
        if message is not None and not isinstance(message, str):
            return _bad("reject", "a rejection's message must be text")
        return Read(Decision.reject((message or "").strip() or DEFAULT_REJECTION),
                    kind="reject")
    if kind in ("respond", "response"):
        message = item.get("message") if kind == "respond" else item.get("args")
        if not isinstance(message, str) or not message.strip():
            return _bad(str(kind), "a response needs a non-empty message")
        return Read(Decision.respond(message), kind="respond")
    if kind == "ignore":
        return Read(Decision.reject(IGNORED), kind="ignore")
    return _bad(str(kind), f"unknown decision type {kind!r}; expected one of "
                           f"{', '.join(DECISIONS)}")


def _one_item(value: Any) -> tuple[Mapping[str, Any] | None, str | None]:
    """The one decision in ``value``, or why there is none (``None``: a plain wake-up)."""
    items: Any
    if isinstance(value, Mapping) and "decisions" in value:
        items = value["decisions"]
        if not isinstance(items, Sequence) or isinstance(items, str | bytes):
            return None, "'decisions' must be a list"
    elif isinstance(value, Mapping) and "type" in value:
        items = [value]
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes) and value \
            and all(isinstance(v, Mapping) and "type" in v for v in value):
        items = value
    else:
        return None, None
    if len(items) == 0:
        return None, None
    if len(items) != 1:
        return None, (f"{len(items)} decisions for one call: each signoff interrupt stands "
                      "for one call; answer each by its interrupt id")
    if not isinstance(items[0], Mapping):
        return None, "a decision must be an object"
    return items[0], None


def _edit(action: Any, tool: str, *, kind: str) -> Read:
    if not isinstance(action, Mapping):
        return _bad(kind, "an edit needs the edited action {name, args}")
    name = action.get("name", action.get("action"))
    args = action.get("args")
    if not isinstance(args, Mapping):
        return _bad(kind, "an edit's args must be an object")
    refusal = None
    if name is not None and name != tool:
        refusal = InvalidDecision(f"an edit may not change the tool ({tool!r} → {name!r}); "
                                  "reject the call instead", code="edit_renames")
    return Read(Decision.edit(dict(args)), kind="edit", refusal=refusal)


def _bad(kind: str, why: str) -> Read:
    return Read(None, kind=kind, why=why, code="malformed_resume")
