"""``gate_agent``: a clone of an SDK agent whose tools all go through signoff.

Every ``FunctionTool`` is gated (``tools.GatedTool``); the agents it hands off to are
gated alike (an ``Agent`` listed in ``handoffs`` is cloned; a ``Handoff`` object hands
over the gated clone of the agent it returns). What the gate could not see is refused
when the agent is built, never run unjudged: hosted tools and other non-function tools
(their calls run on OpenAI's side or in the SDK's own executors), ``mcp_servers`` (their
tools are listed at run time — put ``signoff mcp-proxy`` in front of the server), and an
agent used as a tool (``Agent.as_tool``) whose own agent is not gated.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any

from agents import Agent, FunctionTool, Handoff, HostedMCPTool, RunContextWrapper

from signoff.adapters.openai_agents.hooks import GatedHooks
from signoff.adapters.openai_agents.hosted import GatedHostedMCPTool, HostedGating
from signoff.adapters.openai_agents.scope import Scope
from signoff.adapters.openai_agents.tools import GatedTool
from signoff.errors import ConfigurationError
from signoff.kernel.protocol import GateProtocol
from signoff.model import InteractionMode, ReviewMode

AGENT = "openai-agents"


def gate_agent(agent: Agent[Any], gate: GateProtocol, *, thread_id: str | None = None,
               interaction_mode: InteractionMode | str = InteractionMode.INTERACTIVE,
               principal: str | None = None, subagent_wait: float = 300.0,
               review_mode: ReviewMode | str | None = None) -> Agent[Any]:
    """The agent, and every agent it hands off to, with each tool call judged by ``gate``.

    ``thread_id``: the signoff thread of the runs (a mapping run context's
    ``signoff_thread_id`` wins, so one gated agent can serve many threads).
    ``subagent_wait``: how long an ask made inside another gated call (this agent used as
    a tool) waits in place for its decision before it is withdrawn. ``review_mode``: the
    runs' review mode, fixed by the application (default: the thread's), clamped by the
    policy's ceiling. ``interaction_mode`` and ``review_mode`` come only from here — trusted
    code — never from the run context the model's run carries."""
    if not 0 < subagent_wait <= 86400:
        raise ValueError("subagent_wait must be between 0 and 86400 seconds")
    if getattr(gate, "agent", None) == "agent":  # an in-process gate under its default name
        gate.agent = AGENT  # type: ignore[attr-defined]
    scope = Scope(gate=gate, thread_id=thread_id,
                  interaction_mode=InteractionMode(interaction_mode), principal=principal,
                  subagent_wait=subagent_wait,
                  review_mode=None if review_mode is None else ReviewMode(review_mode))
    return _Gating(scope).agent(agent)


def is_gated(agent: Agent[Any]) -> bool:
    """Every tool of ``agent`` runs through signoff (and it has no MCP servers)."""
    return not agent.mcp_servers and isinstance(agent.hooks, GatedHooks) and all(
        (isinstance(t, FunctionTool) and isinstance(t.on_invoke_tool, GatedTool))
        or (isinstance(t, GatedHostedMCPTool) and t.gating is not None)
        for t in agent.tools)


class _Gating:
    """One ``gate_agent`` call: the clones made so far, so a handoff cycle ends."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.hosted = HostedGating(scope)
        self.made: dict[int, Agent[Any]] = {}

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        known = self.made.get(id(agent))
        if known is not None:
            return known
        if agent.mcp_servers:
            raise ConfigurationError(
                f"agent {agent.name!r} has MCP servers, whose tools signoff cannot gate here; "
                "put signoff mcp-proxy in front of each server instead",
                code="ungated_mcp_servers")
        gated = agent.clone(tools=[self.tool(agent.name, t) for t in agent.tools])
        if not isinstance(gated.hooks, GatedHooks):
            # Every agent of the run, not only those with hosted tools: the model call that
            # sends an approval may be another agent's (a handoff in the same turn).
            gated.hooks = GatedHooks(self.hosted, gated.hooks)
        self.made[id(agent)] = gated
        gated.handoffs = [self.handoff(h) for h in agent.handoffs]
        return gated

    def tool(self, owner: str, tool: Any) -> Any:
        if isinstance(tool, HostedMCPTool):
            return self.hosted.tool(owner, tool)
        if not isinstance(tool, FunctionTool):
            raise ConfigurationError(
                f"agent {owner!r} has the tool {getattr(tool, 'name', tool)!r} "
                f"({type(tool).__name__}), whose calls signoff cannot gate: only function "
                "tools can be gated", code="ungated_tool")
        if isinstance(tool.on_invoke_tool, GatedTool):
            return tool
        inner = getattr(tool, "_agent_instance", None)
        if getattr(tool, "_is_agent_tool", False) and (
                not isinstance(inner, Agent) or not is_gated(inner)):
            raise ConfigurationError(
                f"the tool {tool.name!r} of agent {owner!r} runs the agent "
                f"{getattr(inner, 'name', inner)!r}, whose tools are not gated: gate it first "
                "(gate_agent(inner, gate).as_tool(...))", code="ungated_subagent")
        return GatedTool(tool, self.scope).tool(tool)

    def handoff(self, target: Any) -> Any:
        if isinstance(target, Agent):
            return self.agent(target)
        if not isinstance(target, Handoff):
            raise ConfigurationError(f"a handoff signoff cannot read: {target!r}",
                                     code="ungated_handoff")
        invoke = target.on_invoke_handoff
        gating = self

        async def gated_handoff(context: RunContextWrapper[Any], raw: str) -> Any:
            return gating.agent(await invoke(context, raw))

        wrapped = copy.copy(target)
        wrapped.on_invoke_handoff = gated_handoff
        # The SDK also reaches the target through this reference (its agent graph, which a
        # stored RunState is resumed into): it must be the gated clone, or a resumed run
        # would go on in the ungated agent (the clone is kept alive by ``made``).
        known = target._agent_ref() if target._agent_ref is not None else None
        if isinstance(known, Agent):
            wrapped._agent_ref = weakref.ref(self.agent(known))
        return wrapped
