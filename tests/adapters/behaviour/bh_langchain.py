"""The shared suite's LangChain driver: ``create_agent`` with ``SignoffMiddleware``, a
scripted chat model, LangGraph's ``SqliteSaver`` (the paused run, across processes) and
resume by ``resume_command``."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from bh_world import Driver, Script, Turn, World, tools
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from signoff.adapters.langchain import SignoffContext, SignoffMiddleware
from signoff.adapters.langchain.run import pending_request_ids, resume_command


class QueueModel(FakeMessagesListChatModel):
    """Answers each model call with the script's next turn; records the tools offered
    (``script``: the driver, or a child's ``Script``, shared across models)."""

    script: Any = None

    def bind_tools(self, tools: Sequence[Any], **_: Any) -> Any:  # type: ignore[override]
        self.script.offered.append([getattr(t, "name", None) or t.get("name") for t in tools])
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        turn = self.script.next_turn()
        if isinstance(turn, str):
            message = AIMessage(content=turn)
        else:
            message = AIMessage(content="", tool_calls=[
                {"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in turn])
        return ChatResult(generations=[ChatGeneration(message=message)])


class LangChainDriver(Driver):
    name = "langchain"

    def __init__(self, w: World) -> None:
        super().__init__(w)
        self.config: dict[str, Any] = {"configurable": {"thread_id": w.thread}}
        self.context = SignoffContext()
        self.wait = 300.0
        self.extra: list[BaseTool] = []
        self.last: Any = None  # the last wake-up

    def _agent(self) -> Any:
        conn = sqlite3.connect(self.w.tmp / "checkpoints.db", check_same_thread=False)
        self.w.closing.append(conn.close)
        model = QueueModel(responses=[], script=self)
        return create_agent(model, tools=[*(tool(f) for f in tools(self.w.ledger)),
                                          *self.extra],
                            middleware=[SignoffMiddleware(self.w.gate, subagent_wait=self.wait)],
                            checkpointer=SqliteSaver(conn), context_schema=SignoffContext)

    def _invoke(self, value: Any) -> list[str]:
        agent = self._agent()  # new objects each time, as a new process builds them
        out = agent.invoke(value, self.config, context=self.context)
        for message in out["messages"]:
            if isinstance(message, ToolMessage):
                self.seen(message.tool_call_id, str(message.content))
        return pending_request_ids(agent, self.config, gate=self.w.gate)

    def start(self, turns: Sequence[Turn], *, interaction_mode: str = "interactive",
              subagent_wait: float = 300.0) -> list[str]:
        self.queue.extend(turns)
        self.context = SignoffContext(interaction_mode=interaction_mode)
        self.wait = subagent_wait
        return self._invoke({"messages": [{"role": "user", "content": "go"}]})

    def resume(self, turns: Sequence[Turn] = ()) -> list[str]:
        self.queue.extend(turns)
        self.last = resume_command(self._agent(), self.config, gate=self.w.gate)
        assert self.last is not None, "the run is not paused"
        return self._invoke(self.last)

    def replay(self) -> list[str]:
        assert self.last is not None
        return self._invoke(self.last)

    def delegating(self, parent: Sequence[Turn], child: Sequence[Turn], *,
                   subagent_wait: float, interaction_mode: str = "interactive") -> list[str]:
        w, script = self.w, Script(child)

        @tool
        def delegate(task: str) -> str:
            """Hand a task to a subagent."""
            model = QueueModel(responses=[], script=script)
            sub = create_agent(model, tools=[tool(f) for f in tools(w.ledger)],
                               middleware=[SignoffMiddleware(w.gate, subagent_wait=subagent_wait)],
                               checkpointer=InMemorySaver(), context_schema=SignoffContext)
            # no context of its own: the middleware makes it the running call's child
            out = sub.invoke({"messages": [{"role": "user", "content": task}]},
                             {"configurable": {"thread_id": f"{w.thread}-child"}})
            results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
            return f"{results[0].status}: {results[0].content}"

        self.extra = [delegate]
        return self.start(parent, subagent_wait=subagent_wait,
                          interaction_mode=interaction_mode)
