"""The agent hooks of a gated agent: signoff's for hosted MCP tools, then the application's.

The SDK has no per-tool callback that can both answer a hosted call at once and leave it
to pause the run, so signoff works around the model call: ``on_llm_end`` judges the
approval requests of the response before the SDK plans its tools (``hosted``), and
``on_llm_start`` claims the approvals the next call sends, then ``on_llm_end`` records
what the provider did with them (``sending``). Every gated agent has them, not only those
with hosted tools: the model call that sends an approval may be another agent's (a
handoff in the same turn). The application's own ``hooks`` still run, after signoff's;
every other hook is theirs alone.
"""

from __future__ import annotations

from typing import Any

from agents import Agent, AgentHookContext, AgentHooks, RunContextWrapper, Tool
from agents.items import ModelResponse, TResponseInputItem

from signoff.adapters.openai_agents.hosted import HostedGating
from signoff.adapters.openai_agents.sending import Sending


class GatedHooks(AgentHooks[Any]):
    """``Agent.hooks`` of a gated agent."""

    def __init__(self, gating: HostedGating, inner: AgentHooks[Any] | None) -> None:
        self.gating = gating
        self.sending = Sending(gating)
        self.inner = inner

    async def on_llm_start(self, context: RunContextWrapper[Any], agent: Agent[Any],
                           system_prompt: str | None,
                           input_items: list[TResponseInputItem]) -> None:
        await self.sending.claim(context, input_items)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any],
                         response: ModelResponse) -> None:
        await self.sending.record(context, response)
        await self.gating.judge(context, agent, response)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        if self.inner is not None:
            await self.inner.on_start(context, agent)

    async def on_end(self, context: AgentHookContext[Any], agent: Agent[Any],
                     output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_end(context, agent, output)

    async def on_handoff(self, context: RunContextWrapper[Any], agent: Agent[Any],
                         source: Agent[Any]) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, agent, source)

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any],
                            tool: Tool) -> None:
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any],
                          tool: Tool, result: object) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)
