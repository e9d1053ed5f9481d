"""Hosted MCP tools (``HostedMCPTool``): each call the provider would make is judged by the
gate through the SDK's own approval requests, the way function tools are.

A hosted server runs on the provider's side, so signoff never sees the call itself — only
the ``mcp_approval_request`` the provider sends first. Every hosted tool is therefore
copied with ``require_approval: "always"``: a call that asked no approval would run
unjudged, so an application's ``"never"`` or per-tool map is overridden. When the model's
response arrives (the agent's ``on_llm_end``, before the SDK plans its tools) each request
is proposed as ``<server_label>__<tool>`` — the name ``signoff mcp-proxy --name
<server_label>`` gives the same server's tools — with the parsed arguments and the request
id as its call id: allowed → approved at once, denied → rejected with the verdict's
message, an ask → left to the SDK, which pauses the run on it (``paused``,
``apply_decisions``). An application's ``on_approval_request`` is refused: the SDK would
call it instead of pausing, and it would answer what people must decide.

A decided request is answered by ``answer``. An approval carries no arguments (the
provider runs the ones it proposed), so an approver's edit cannot be applied: the call is
rejected, and so is one whose arguments in the run state are not the approved ones. The
approval itself is claimed when it is sent (``sending``), so it goes out once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast

from agents import Agent, HostedMCPTool, RunContextWrapper, ToolApprovalItem
from agents.items import ModelResponse
from openai.types.responses.response_output_item import McpApprovalRequest
from openai.types.responses.tool_param import Mcp

from signoff.adapters.openai_agents import texts
from signoff.adapters.openai_agents.scope import Scope
from signoff.canonical import args_hash, parse_args
from signoff.errors import ConfigurationError, SignoffError
from signoff.kernel.outcomes import Outcome, OutcomeKind, Proposal, ProposalKind
from signoff.model import RunContext, ToolCall

# What an approval request is answered with: True (approve), False and the text the model
# reads (reject), or None (still waiting: the SDK pauses the run on it).
Answer = tuple[bool | None, str | None]
# Requests already answered through signoff: their approval went out once, never again.
SENT = (OutcomeKind.EXECUTING, OutcomeKind.EXECUTED, OutcomeKind.FAILED, OutcomeKind.UNKNOWN)


@dataclass
class GatedHostedMCPTool(HostedMCPTool):
    """A hosted MCP tool whose approval requests signoff answers."""

    gating: HostedGating | None = field(default=None, repr=False, compare=False)


def field_of(raw: Any, name: str) -> Any:
    return raw.get(name) if isinstance(raw, dict) else getattr(raw, name, None)


def is_hosted_request(raw: Any) -> bool:
    return bool(field_of(raw, "type") == "mcp_approval_request")


def gating_of(agent: Any, raw: Any) -> HostedGating | None:
    """The gating of the hosted tool of ``agent`` an approval request ``raw`` belongs to."""
    label = field_of(raw, "server_label")
    for tool in getattr(agent, "tools", None) or []:
        if isinstance(tool, GatedHostedMCPTool) and tool.gating is not None \
                and tool.tool_config.get("server_label") == label:
            return tool.gating
    return None


class HostedGating:
    """The hosted MCP tools of one ``gate_agent`` call: copied, and their requests judged."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.labels: set[str] = set()  # the server labels of the tools gated here

    def tool(self, owner: str, tool: HostedMCPTool) -> GatedHostedMCPTool:
        """A copy of ``tool`` that asks approval for every call (its own config unchanged)."""
        label = tool.tool_config.get("server_label")
        if isinstance(tool, GatedHostedMCPTool) and tool.gating is not None:
            self.labels.add(str(label))  # its approvals may go out in this gating's runs
            return tool
        if tool.on_approval_request is not None:
            raise ConfigurationError(
                f"the hosted MCP tool {label!r} of agent {owner!r} has its own "
                "on_approval_request, which the SDK would ask instead of pausing the run for "
                "people: remove it, signoff's policy and approvers answer its calls",
                code="hosted_approval_callback")
        # Naming a call needs the policy's [mcp] table: a Client made without the policy
        # fails here (no_policy), not in the middle of a run.
        self.policy_name({"name": "", "server_label": label})
        config = dict(tool.tool_config)
        config["require_approval"] = "always"
        self.labels.add(str(label))
        return GatedHostedMCPTool(tool_config=cast(Mcp, config), gating=self)

    def policy_name(self, raw: Any) -> str:
        """``<server_label>__<tool>`` (the ``[mcp]`` separator), as the MCP proxy names it."""
        return self.scope.gate.config.mcp.policy_name(
            str(field_of(raw, "name")), str(field_of(raw, "server_label")))

    def names(self, tool: str) -> bool:
        """Whether ``tool`` is the policy name of a call to one of these hosted tools."""
        return any(tool.startswith(self.scope.gate.config.mcp.policy_name("", label))
                   for label in self.labels)

    async def propose(self, raw: Any, context: RunContext) -> Proposal | str:
        """The gate's proposal for an approval request, or why it cannot be judged."""
        if not context.thread_id:
            return texts.NO_THREAD
        try:
            call = ToolCall(id=str(field_of(raw, "id")), name=self.policy_name(raw),
                            args=field_of(raw, "arguments"))
            return await asyncio.to_thread(self.scope.gate.propose, call, context)
        except SignoffError as exc:  # arguments that do not read, a reused id, …
            return f"{texts.NOTE} The call was not run ({exc.code}): {exc}"

    async def request_of(self, raw: Any, context: RunContext) -> str | None:
        """The request this approval request already has on its thread, if any."""
        if not context.thread_id:
            return None
        call_id, name = field_of(raw, "id"), self.policy_name(raw)
        found = await asyncio.to_thread(self.scope.gate.thread_requests, context.thread_id)
        return next((r.id for r in found if r.call_id == call_id and r.tool == name), None)

    async def judge(self, context: RunContextWrapper[Any], agent: Agent[Any],
                    response: ModelResponse) -> None:
        """Answer in the run's context, before the SDK plans its tools, every approval
        request of ``response`` the gate answers at once; an ask is left to pause the run."""
        for raw in response.output:
            if not isinstance(raw, McpApprovalRequest):
                continue
            gating = gating_of(agent, raw)
            if gating is None:
                continue
            approve, text = await gating.first_answer(raw, context.context)
            item = ToolApprovalItem(agent=agent, raw_item=raw, tool_name=raw.name)
            if approve is True:
                context.approve_tool(item)
            elif approve is False:
                context.reject_tool(item, rejection_message=text)

    async def first_answer(self, raw: Any, app_context: Any) -> Answer:
        context = self.scope.context(app_context)
        found = await self.propose(raw, context)
        if isinstance(found, str):
            return False, found
        if found.kind is ProposalKind.ALLOWED:
            return True, None
        if found.request_id is None:
            return False, texts.refused(found.verdict)
        if found.kind is ProposalKind.PENDING:
            if not context.parent_call:
                return None, None  # the SDK pauses the run on it
            await self._wait_in_place(found.request_id, context)
        return await self.answer(found.request_id, raw)

    async def _wait_in_place(self, request_id: str, context: RunContext) -> None:
        """Inside another gated call (an agent used as a tool) an ask cannot pause the outer
        run: it waits here ``subagent_wait`` seconds, then its request is withdrawn."""
        gate, wait = self.scope.gate, self.scope.subagent_wait
        outcome = await asyncio.to_thread(gate.wait, request_id, timeout=wait)
        if outcome.kind is OutcomeKind.PENDING:
            await asyncio.to_thread(gate.cancel, request_id, actor=context.principal,
                                    reason=f"the subagent's wait of {wait:g}s ran out")

    async def answer(self, request_id: str, raw: Any) -> Answer:
        """What a request's decision sets on the run state for its approval request."""
        gate = self.scope.gate
        outcome = await asyncio.to_thread(gate.outcome, request_id)
        if outcome.kind is OutcomeKind.PENDING:
            return None, None
        if outcome.kind in SENT:
            return False, texts.hosted_answered(outcome)
        if outcome.kind is not OutcomeKind.APPROVED:
            return False, texts.of_outcome(outcome)
        refusal = await self._unbound(request_id, raw)
        if refusal is None:
            return True, None  # claimed when the approval is sent (sending.Sending)
        # Not to be run: claimed and reported as not run, so no later approval can go out.
        claimed = await asyncio.to_thread(gate.claim, request_id)
        if isinstance(claimed, Outcome):
            return False, texts.of_outcome(claimed) if claimed.kind not in SENT \
                else texts.hosted_answered(claimed)
        await asyncio.to_thread(gate.report, claimed, error=f"not run: {refusal[1]}")
        return False, refusal[0]

    async def _unbound(self, request_id: str, raw: Any) -> tuple[str, str] | None:
        """Why an approval could not carry what people approved — (the model's text, the
        record's) — or ``None`` when the request's arguments are exactly the proposed ones."""
        request = await asyncio.to_thread(self.scope.gate.get_request, request_id)
        if request.run_hash != request.args_hash:
            return (texts.hosted_edit(request.outcome_reason),
                    "an approver's edit cannot be applied by a hosted MCP tool")
        if proposed_hash(raw) != request.args_hash:
            return texts.HOSTED_OTHER_ARGS, "the run state's arguments are not the approved ones"
        return None


def proposed_hash(raw: Any) -> str | None:
    """The hash of an approval request's arguments (``None``: they do not read)."""
    try:
        return args_hash(parse_args(field_of(raw, "arguments")))
    except SignoffError:
        return None
