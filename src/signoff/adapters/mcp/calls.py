"""``tools/call`` through the gate: allowed calls go on, refused ones come back as tool
errors, asked ones wait for a human (elicitation or the inbox) and run once, approved.

The call the policy sees is the MCP tool under its policy name
(``[mcp] server``: ``fs__write_file``) with the arguments as sent; the run
context is the session's (thread = session, interaction and review mode from
the command line). What happens to each verdict:

* allow — forwarded as it came; the server's result goes back untouched and a
  ``call.result`` audit event records its hash;
* deny / blocked — a result with ``isError: true`` and the verdict's message,
  which is written for the model; nothing reaches the server;
* ask — an approval request, in the inbox at once; the call waits
  (``asking.py``) and, approved, runs through the claim with the approved
  (possibly edited) arguments, exactly once; a second identical call in the
  same session joins the first one's request instead of asking again.

The tool's definition (description, input schema, annotations, hashed:
``signoff.policy.definitions``) as the latest listing showed it goes with each
call: requests and grants record it, a grant admits only calls under the same
definition, and a tool whose definition changed since the session first saw
it is asked of a human anew — whatever the mode or grants — until a human
approves a call under the new definition. A tool listed twice counts with the
most careful of its entries' hints.

An approved call whose server goes away (or whose client cancels it) mid-run
may or may not have happened: it becomes ``unknown`` at once and is never
retried (``Gate.abandon``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp_types import ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse

from signoff.adapters.mcp.asking import Asker, takes_elicitation
from signoff.adapters.mcp.client_version import (
    INPUT_KEY,
    RESERVED_META,
    STATE_PREFIX,
    ClientVersion,
    input_required,
)
from signoff.adapters.mcp.relay import CallCancelled, Relay, RequestId, UpstreamGone
from signoff.adapters.mcp.results import (
    error_result,
    outcome_result,
    refusal_result,
    stopped_result,
)
from signoff.canonical import args_hash, canonical_bytes, parse_args
from signoff.errors import InvalidArguments, NotFound, SignoffError
from signoff.kernel.execution import Execution
from signoff.kernel.gate import Gate
from signoff.kernel.outcomes import Outcome, OutcomeKind, ProposalKind
from signoff.model import ApprovalRequest, RequestStatus, RunContext, ToolCall
from signoff.policy.definitions import definition_hash
from signoff.policy.hints import ToolHints

log = logging.getLogger("signoff.mcp")
INVALID_PARAMS = -32602
MAX_PAGES = 100  # of a tool list the proxy reads itself
JoinKey = tuple[str, str, str | None]


@dataclass
class Session:
    """What one MCP session keeps: its run context and the requests its calls made."""

    context: RunContext
    # (policy tool name, args hash, definition hash) -> request id, while that request may
    # still run: a repeated call (the model retrying after a timeout) joins it instead of
    # asking again.
    asked: dict[JoinKey, str] = field(default_factory=dict)


class CallGate:
    def __init__(self, gate: Gate, asker: Asker, *, server: str | None = None) -> None:
        self.gate = gate
        self.asker = asker
        self.mcp = gate.config.mcp
        self.server = server  # overrides [mcp] server (None: the table's)
        self.listed: set[str] = set()  # tools some tools/list has shown (their hints are in)
        self.fetched = False  # the proxy has read the whole list itself
        self._fetching = anyio.Lock()
        # Per tool: its definition's hash as last listed, and the one the session trusts
        # (the first it saw, or one a human has approved a call under since).
        self.definitions: dict[str, str] = {}
        self.trusted: dict[str, str] = {}
        self._listing: dict[str, list[dict[str, Any]]] = {}  # the entries of this listing
        self._first_seen: set[str] = set()  # tools this listing showed the session first

    def policy_name(self, tool: str) -> str:
        return self.mcp.policy_name(tool, self.server)

    # ---- the tool list: hints -----------------------------------------------------------------

    def learn_tools(self, result: dict[str, Any], *, first_page: bool = True) -> None:
        """Take the annotations of the tools a ``tools/list`` page names as hints, and their
        definitions. A tool listed more than once (on this page or an earlier one of the
        same listing) keeps the most careful of its entries' hints, and its definition is
        all of them."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        if first_page:
            self._listing, self._first_seen = {}, set()
        named: dict[str, list[dict[str, Any]]] = {}
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                named.setdefault(tool["name"], []).append(tool)
        hints: dict[str, ToolHints | None] = {}
        for name, page in named.items():
            entries = self._listing[name] = self._listing.get(name, []) + page
            self.listed.add(name)
            hints[self.policy_name(name)] = _most_careful(
                [ToolHints.from_annotations(e.get("annotations")) for e in entries])
            defined = definition_hash(entries[0]) if len(entries) == 1 else \
                definition_hash({"description": [definition_hash(e) for e in entries]})
            self.definitions[name] = defined
            if name not in self.trusted or name in self._first_seen:
                # First seen in this listing: all of its entries make the trusted definition.
                self._first_seen.add(name)
                self.trusted[name] = defined
        self.gate.add_hints(hints)

    def definition_of(self, tool: str) -> tuple[str | None, bool]:
        """The tool's definition hash as last listed, and whether it changed since the
        session trusted one."""
        defined = self.definitions.get(tool)
        return defined, defined is not None and self.trusted.get(tool, defined) != defined

    def tools_changed(self) -> None:
        """``notifications/tools/list_changed``: the hints must be read again."""
        self.listed.clear()
        self.fetched = False

    async def _ensure_hints(self, relay: Relay, tool: str, meta: object = None) -> None:
        """A call to a tool no listing has shown yet: read the whole list once (the client
        may never list, or list only a page), so that its hints count."""
        if tool in self.listed or self.fetched:
            return
        async with self._fetching:
            if tool in self.listed or self.fetched:
                return
            # A 2026-07-28 server needs each request's envelope: the calling request's.
            envelope = {k: v for k, v in meta.items() if k.startswith(RESERVED_META)} \
                if isinstance(meta, dict) else {}
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                params: dict[str, Any] = {"cursor": cursor} if cursor else {}
                if envelope:
                    params["_meta"] = envelope
                try:
                    reply = await relay.ask_upstream(JSONRPCRequest(
                        jsonrpc="2.0", id=relay.own_id(), method="tools/list", params=params))
                except UpstreamGone:
                    return
                if not isinstance(reply, JSONRPCResponse):
                    log.warning("the server did not list its tools (%s): its annotations "
                                "are not known", reply.error.message)
                    break
                self.learn_tools(reply.result, first_page=cursor is None)
                following = reply.result.get("nextCursor")
                if not isinstance(following, str) or not following:
                    break
                cursor = following
            self.fetched = True

    # ---- one call -----------------------------------------------------------------------------

    async def handle(self, relay: Relay, session: Session, message: JSONRPCRequest) -> None:
        params = message.params or {}
        name = params.get("name")
        raw_args = params.get("arguments")
        if not isinstance(name, str) or not (raw_args is None or isinstance(raw_args, dict)):
            await relay.to_client(JSONRPCError(jsonrpc="2.0", id=message.id, error=ErrorData(
                code=INVALID_PARAMS, message="tools/call needs a tool name and an arguments "
                "object")))
            return
        await self._ensure_hints(relay, name, params.get("_meta"))
        defined, changed = self.definition_of(name)
        call = ToolCall(id=_call_id(message.id), name=self.policy_name(name), args=raw_args,
                        definition_hash=defined, definition_changed=changed)
        version = ClientVersion.of(relay, params)
        state = params.get("requestState")
        answer: object = None
        if isinstance(state, str) and state.startswith(STATE_PREFIX):
            # A modern client answering the approval question (InputRequiredResult): these
            # two keys were ours; the rest of the call is the server's.
            responses = params.get("inputResponses")
            if isinstance(responses, dict) and isinstance(responses.get(INPUT_KEY), dict):
                answer = responses[INPUT_KEY].get("action")
            message = JSONRPCRequest(jsonrpc="2.0", id=message.id, method=message.method,
                                     params={k: v for k, v in params.items()
                                             if k not in ("requestState", "inputResponses")})
        else:
            state = None
        try:
            if state is not None:
                result = await self._answered(relay, session, message, call, version,
                                              request_id=state[len(STATE_PREFIX):],
                                              answer=answer)
            else:
                result = await self._decide_and_run(relay, session, message, call, version)
        except anyio.get_cancelled_exc_class():
            raise
        except SignoffError as exc:  # bad input the verdict could not carry
            result = error_result(f"signoff refused this call: {exc.message}", code=exc.code)
        if result is not None:
            if version.modern and "resultType" not in result:  # 2026-07-28 results say their kind
                result = {**result, "resultType": "complete"}
            await relay.to_client(JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result),
                                  related=message.id)

    async def _answered(self, relay: Relay, session: Session, message: JSONRPCRequest,
                        call: ToolCall, version: ClientVersion, *, request_id: str,
                        answer: object) -> dict[str, Any] | None:
        """The retried call of a modern client, carrying the person's answer."""
        try:
            request = await anyio.to_thread.run_sync(self.gate.request, request_id)
        except NotFound:
            request = None
        key = _join_key(call)
        if request is None or request.thread_id != session.context.thread_id or key is None \
                or (request.tool, request.args_hash, request.definition_hash) != key:
            return error_result("this answer belongs to no approval request of this call in "
                                "this session", code="invalid_request_state")
        if request.status is RequestStatus.PENDING:
            identity = await self.asker.eligible(request)
            if identity is not None:
                await self.asker.answer(request, identity, answer, client=version.client_info)
            request = await anyio.to_thread.run_sync(self.gate.request, request_id)
        return await self._settle(relay, message, request, version, asked=True)

    async def _decide_and_run(self, relay: Relay, session: Session, message: JSONRPCRequest,
                              call: ToolCall, version: ClientVersion) -> dict[str, Any] | None:
        # Only a request this session asked can be joined: no hashing before the first.
        key = _join_key(call) if session.asked else None
        request_id = session.asked.get(key) if key is not None else None
        if request_id is not None:
            request = await anyio.to_thread.run_sync(self.gate.request, request_id)
            if request.status not in (RequestStatus.PENDING, RequestStatus.APPROVED):
                session.asked.pop(key, None)  # type: ignore[arg-type]
                request_id = None
        if request_id is None:
            # A quick allowed verdict needs no database: decided here, without a thread hop
            # (the same verdict and audit event); anything else is proposed in a worker.
            proposal = self.gate.propose_now(call, session.context)
            if proposal is None:
                proposal = await anyio.to_thread.run_sync(self.gate.propose, call,
                                                          session.context)
            if proposal.kind is ProposalKind.ALLOWED:
                return await self._forward_allowed(relay, session, message, call)
            if proposal.kind in (ProposalKind.DENIED, ProposalKind.BLOCKED):
                return refusal_result(proposal.verdict)
            assert proposal.request is not None
            request = proposal.request
            if key is None:
                key = _join_key(call)
            if key is not None:
                session.asked[key] = request.id
        try:
            return await self._settle(relay, message, request, version)
        finally:
            current = session.asked.get(key) if key is not None else None
            if current == request.id:
                latest = await anyio.to_thread.run_sync(self.gate.request, request.id)
                if latest.status not in (RequestStatus.PENDING, RequestStatus.APPROVED):
                    session.asked.pop(key, None)  # type: ignore[arg-type]

    async def _settle(self, relay: Relay, message: JSONRPCRequest, request: ApprovalRequest,
                      version: ClientVersion, *, asked: bool = False) -> dict[str, Any] | None:
        """Wait for the request's decision (if pending) and act on it. A modern client that
        takes elicitation is asked first, by an ``InputRequiredResult`` (``asked``: this
        is its answer coming back)."""
        if request.status is RequestStatus.PENDING and version.modern and not asked \
                and takes_elicitation(version.capabilities) \
                and await self.asker.eligible(request) is not None:
            return input_required(request, self.asker.inbox_link(request.id))
        if request.status is RequestStatus.PENDING:
            try:
                outcome = await self.asker.wait(relay, message, request,
                                                elicit_here=not version.modern)
            except anyio.get_cancelled_exc_class():
                if not relay.client_gone:  # the call was cancelled, not abandoned: withdraw
                    why = relay.ending or "the MCP client cancelled the call"
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(
                            lambda: self.gate.cancel(request.id, actor=None, reason=why))
                raise
        else:
            outcome = await anyio.to_thread.run_sync(self.gate.outcome, request.id)
        stopped = self.asker.stopping.why if self.asker.stopping is not None else None
        if outcome.kind is OutcomeKind.PENDING and stopped is not None:
            return stopped_result(request, stopped, inbox=self.asker.inbox_link(request.id))
        if outcome.kind is not OutcomeKind.APPROVED:
            return outcome_result(outcome, request, waited=self.asker.wait_seconds,
                                  inbox=self.asker.inbox_link(request.id))
        self._trust(message, request)
        relay.forwarding(message.id)  # from here a cancellation goes to the server
        claimed = await anyio.to_thread.run_sync(self.gate.claim, request.id)
        if isinstance(claimed, Outcome):  # invalidated, or another process holds it
            return outcome_result(claimed, request, waited=0, inbox=None)
        return await self._run_claimed(relay, message, request, claimed)

    def _trust(self, message: JSONRPCRequest, request: ApprovalRequest) -> None:
        """A human approved a call under this definition: it is the one trusted now."""
        name = (message.params or {}).get("name")
        if isinstance(name, str) and request.definition_hash is not None \
                and self.definitions.get(name) == request.definition_hash:
            self.trusted[name] = request.definition_hash

    async def _run_claimed(self, relay: Relay, message: JSONRPCRequest,
                           request: ApprovalRequest, claimed: Execution) -> dict[str, Any] | None:
        params = dict(message.params or {})
        params["arguments"] = claimed.args  # exactly what was approved (an edit's arguments)
        forwarded = JSONRPCRequest(jsonrpc="2.0", id=message.id, method="tools/call",
                                   params=params)
        try:
            with anyio.CancelScope(shield=True):  # a claimed run is always accounted for
                reply = await relay.ask_upstream(forwarded)
        except (UpstreamGone, CallCancelled) as exc:
            lost = isinstance(exc, UpstreamGone)
            why = ("the MCP server closed during the call" if lost else
                   f"the client cancelled the call while the server ran it ({exc})")
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(
                    lambda: self.gate.abandon(claimed, reason=why))
            if not lost:
                return None  # a cancelled request gets no response
            return error_result(
                f"{why}: it may or may not have happened. Approval request {request.id} is "
                "now 'unknown'; signoff does not run it again. Check the result before "
                "proposing it again.", code="outcome_unknown", request_id=request.id)
        if isinstance(reply, JSONRPCError):
            await anyio.to_thread.run_sync(
                lambda: self.gate.report(claimed, error=f"MCP error {reply.error.code}: "
                                         f"{reply.error.message}"))
            await relay.to_client(reply)
            return None
        result = reply.result
        if result.get("isError") is True:
            text = _text_of(result) or "the tool reported an error"
            await anyio.to_thread.run_sync(lambda: self.gate.report(claimed, error=text))
        else:
            await anyio.to_thread.run_sync(lambda: self.gate.report(claimed, result=result))
        return result

    async def _forward_allowed(self, relay: Relay, session: Session, message: JSONRPCRequest,
                               call: ToolCall) -> dict[str, Any] | None:
        relay.forwarding(message.id)
        try:
            reply = await relay.ask_upstream(message)
        except CallCancelled:  # the server was told; it may have done some of it
            self._audit_result(session, call, None, lost=True, cancelled=True)
            return None
        except UpstreamGone:
            self._audit_result(session, call, None, lost=True)
            return error_result(
                "the MCP server closed during the call: it may or may not have happened; "
                "signoff does not retry it", code="outcome_unknown")
        if isinstance(reply, JSONRPCError):
            self._audit_result(session, call, None, error=reply.error.message)
            await relay.to_client(reply)
            return None
        try:  # the answer first: its audit event is batched, hashing it would only delay it
            await relay.to_client(JSONRPCResponse(jsonrpc="2.0", id=message.id,
                                                  result=reply.result), related=message.id)
        finally:
            self._audit_result(session, call, reply.result)
        return None

    def _audit_result(self, session: Session, call: ToolCall, result: dict[str, Any] | None,
                      *, lost: bool = False, cancelled: bool = False,
                      error: str | None = None) -> None:
        """An allowed call's result, by hash (batched with the verdicts: it changes no
        request)."""
        data: dict[str, Any] = {"tool": call.name, "call_id": call.id,
                                "thread_id": session.context.thread_id}
        if lost:
            data["outcome"] = "unknown"
            if cancelled:
                data["cancelled"] = True
        elif error is not None:
            data["outcome"] = "protocol_error"
            data["error"] = error[:500]
        else:
            assert result is not None
            data["outcome"] = "error" if result.get("isError") is True else "ok"
            data["result_hash"] = _result_hash(result)
        self.gate.note_call_result(data, actor=session.context.principal or self.gate.agent)


def _call_id(request_id: RequestId) -> str:
    """A JSON-RPC id as a call id: never reused within a session (the protocol says so)."""
    if isinstance(request_id, int):
        return f"rpc-{request_id}"
    return "rpc-s-" + hashlib.sha256(request_id.encode("utf-8", "replace")).hexdigest()[:24]


def _join_key(call: ToolCall) -> JoinKey | None:
    try:
        return (call.name, args_hash(parse_args(call.args)), call.definition_hash)
    except InvalidArguments:
        return None


def _most_careful(hints: list[ToolHints | None]) -> ToolHints | None:
    """Several entries' hints as one: a hint any entry gives counts (``destructiveHint:
    true`` is not undone by a later ``false``)."""
    destructive = any(h is not None and h.destructive for h in hints)
    open_world = any(h is not None and h.open_world for h in hints)
    return ToolHints(destructive=destructive, open_world=open_world) \
        if destructive or open_world else None


def _result_hash(result: dict[str, Any]) -> str:
    try:
        return "sha256:" + hashlib.sha256(canonical_bytes(result)).hexdigest()
    except (InvalidArguments, TypeError, ValueError):
        return "sha256:" + hashlib.sha256(json.dumps(result, sort_keys=True, default=repr)
                                          .encode()).hexdigest()


def _text_of(result: dict[str, Any]) -> str:
    parts = [item.get("text", "") for item in result.get("content") or []
             if isinstance(item, dict) and item.get("type") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str))[:2000]
