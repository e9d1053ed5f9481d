"""The shared suite's OpenAI Agents SDK driver: ``gate_agent`` over an SDK ``Agent`` whose
model is the SDK's own ``ScriptedModel`` fed from the script, the pause kept as
``RunState.to_string()`` in a file and resumed with ``apply_decisions`` into new objects."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

import agents
from agents import Agent, Runner, RunState, function_tool
from agents.exceptions import ModelBehaviorError
from agents.testing import ScriptedModel, assistant_message, function_call
from bh_world import Driver, Script, Turn, World, tools
from pydantic import BaseModel

from signoff.adapters.openai_agents import apply_decisions, gate_agent, paused

agents.set_tracing_disabled(True)


class QueueModel(ScriptedModel):
    """Takes each step from the script when the SDK calls it; records the tools offered and
    the tool outputs the model is sent."""

    def __init__(self, script: Script, told: Driver | None) -> None:
        super().__init__()
        self.script, self.driver = script, told

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any,
                           tools: Any, *args: Any, **kwargs: Any) -> Any:
        self.script.offered.append([t.name for t in tools])
        for item in input if isinstance(input, list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output" \
                    and self.driver is not None:
                self.driver.seen(str(item["call_id"]), str(item["output"]))
        turn = self.script.next_turn()
        self.enqueue([assistant_message(turn)] if isinstance(turn, str) else
                     [function_call(n, a, call_id=i) for n, a, i in turn])
        return await super().get_response(system_instructions, input, model_settings, tools,
                                          *args, **kwargs)


class Task(BaseModel):
    task: str


class OpenAIAgentsDriver(Driver):
    """The SDK ends a run with ``ModelBehaviorError`` on a turn whose call ids repeat and
    on a call of a tool it did not offer, before any tool of the turn runs: the driver
    reports such a run as ended."""

    name = "openai-agents"
    ends_on_unoffered_tool = True

    def __init__(self, w: World) -> None:
        super().__init__(w)
        self.options: dict[str, Any] = {}
        self.child: Script | None = None
        self.stored = w.tmp / "run_state.json"
        self.last: str | None = None  # the state the last wake-up resumed
        self.ended = ""  # why the SDK ended the run, if it did

    def _agent(self) -> Agent[Any]:
        """New objects over the same gate and script, as a new process builds them."""
        extra: list[Any] = []
        if self.child is not None:
            inner = gate_agent(Agent(name="helper", instructions="Help.",
                                     model=QueueModel(self.child, None),
                                     tools=[function_tool(f) for f in tools(self.w.ledger)]),
                               self.w.gate, thread_id=self.w.thread,
                               subagent_wait=self.options["subagent_wait"])
            extra.append(inner.as_tool("delegate", "Hand a task to a subagent.",
                                       parameters=Task))
        plain = Agent(name="ops", instructions="Operate.", model=QueueModel(self, self),
                      tools=[*(function_tool(f) for f in tools(self.w.ledger)), *extra])
        return gate_agent(plain, self.w.gate, **self.options)

    def _after(self, result: Any) -> list[str]:
        if not result.interruptions:
            return []
        self.stored.write_text(result.to_state().to_string())
        return [p.request_id for p in asyncio.run(paused(result)) if p.request_id]

    def start(self, turns: Sequence[Turn], *, interaction_mode: str = "interactive",
              subagent_wait: float = 300.0) -> list[str]:
        self.queue.extend(turns)
        self.options = {"thread_id": self.w.thread, "interaction_mode": interaction_mode,
                        "subagent_wait": subagent_wait}
        try:
            return self._after(asyncio.run(Runner.run(self._agent(), "go")))
        except ModelBehaviorError as exc:
            self.ended = str(exc)
            return []

    def _resume(self, text: str) -> list[str]:
        async def wake() -> Any:
            agent = self._agent()
            state = await RunState.from_string(agent, text)
            await apply_decisions(state)
            return await Runner.run(agent, state)
        return self._after(asyncio.run(wake()))

    def resume(self, turns: Sequence[Turn] = ()) -> list[str]:
        self.queue.extend(turns)
        self.last = self.stored.read_text()
        return self._resume(self.last)

    def replay(self) -> list[str]:
        assert self.last is not None
        return self._resume(self.last)

    def delegating(self, parent: Sequence[Turn], child: Sequence[Turn], *,
                   subagent_wait: float, interaction_mode: str = "interactive") -> list[str]:
        self.child = Script(child)
        return self.start(parent, subagent_wait=subagent_wait,
                          interaction_mode=interaction_mode)
